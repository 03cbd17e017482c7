// Signals to a backend's processes, each only while its pid still names the process recorded (pid + start time) as
// the platform layer reads it just before: a pid the OS gave to an unrelated process meanwhile is never signalled,
// nor the group that pid would name.
import type { Member, Platform } from '../platform/types.ts';

/**
 * What `pid` names now, against the process recorded with `startTime`: 'ours' while it is that process (a zombie
 * still is: its pid cannot be reused until it is reaped), 'gone' when no process has the pid, 'other' when another
 * process does (or an entry without a start time cannot be told apart from one).
 */
export async function ownership(platform: Platform, pid: number, startTime: string | null): Promise<'ours' | 'gone' | 'other'> {
  const now = (await platform.statuses([pid])).get(pid);
  if (!now) return 'gone';
  return startTime !== null && now.startTime === startTime ? 'ours' : 'other';
}

/** Those of `members` still running as the process recorded (same start time, not a zombie), from one read. */
export async function alive<M extends Member>(platform: Platform, members: M[]): Promise<M[]> {
  if (members.length === 0) return [];
  const now = await platform.statuses(members.map((m) => m.pid));
  return members.filter((m) => {
    const st = now.get(m.pid);
    return st !== undefined && !st.zombie && m.startTime !== null && st.startTime === m.startTime;
  });
}

export async function isSameProcess(platform: Platform, pid: number, startTime: string | null): Promise<boolean> {
  return (await alive(platform, [{ pid, startTime }])).length > 0;
}

/** The start time to record for a fresh process, or null once it has ended. */
export async function startTimeOf(platform: Platform, pid: number): Promise<string | null> {
  return (await platform.process(pid))?.startTime ?? null;
}

/** Signals each member that is still the process it was when the tree was read. */
export async function signalTree(platform: Platform, tree: Member[], signal: NodeJS.Signals): Promise<void> {
  for (const member of await alive(platform, tree)) send(member.pid, signal);
}

/**
 * Signals the leader's process group while the leader is still itself: its pid, held, names no one else's group. A
 * leader that has ended is not signalled by group: its pid is free, and an unrelated process given it between the
 * look and the signal would lead a group of that number (its members are signalled one by one, from the tree read
 * before). A leader that leads no group (a legacy entry) is signalled alone.
 */
export async function signalGroup(platform: Platform, leader: Member, signal: NodeJS.Signals): Promise<void> {
  if ((await ownership(platform, leader.pid, leader.startTime)) !== 'ours') return;
  try {
    process.kill(-leader.pid, signal);
  } catch {
    await signalTree(platform, [leader], signal);
  }
}

function send(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // exited meanwhile
  }
}
