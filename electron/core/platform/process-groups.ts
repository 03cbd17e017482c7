// Containment without cgroups (macOS, or forced on Linux): each backend leads a process group of its own (it is
// started with setsid) and carries a mark in its environment that everything it forks inherits. A stop ends the
// group, every descendant by parent links, and every process that carries the mark: a double fork with setsid
// leaves the group and, once its middle process exits, the parent chain too, but keeps its environment. A process
// that also clears its environment is not found. All of it is read from one `ps` table and one `ps e`, before any
// signal (a signalled parent's orphans are re-parented, and no later walk finds them).
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { psEnvironments, psTable, run } from './ps.ts';
import type { Container, Containment, Member, ProcessEntry, ProcessTracking } from './types.ts';

export const MARK = 'HANGAR_CONTAINER';
const EXIT_POLL_MS = 50;
/** How long the processes sent SIGKILL are given to be gone before a stop says which are not. */
const KILLED_LIMIT_MS = 5000;

const TRACKING: ProcessTracking = {
  mechanism: 'process-group',
  description: `no cgroups here: each backend leads a process group of its own and carries ${MARK} in its environment; a stop ends the group, every descendant and every process that carries the mark (a process that leaves all three, clearing its environment, is not found)`,
};

/**
 * The supervisor's way: its backend's first process marks itself with its own pid before it becomes the backend, so
 * a backend's mark is its leader's pid and nothing has to be kept to find its processes again.
 */
export const MARK_LEADER = `export ${MARK}=$$`;

export const LEADER_TRACKING: ProcessTracking = {
  mechanism: 'process-group',
  description: `no cgroups here: each backend leads a process group of its own and carries ${MARK}=<its pid> in its environment; a stop ends the group, every descendant and every process that carries the mark (a process that leaves all three, clearing its environment, is not found)`,
};

export class ProcessGroups implements Containment {
  readonly tracking = TRACKING;

  async detect(): Promise<ProcessTracking> {
    return this.tracking;
  }

  async create(): Promise<Container> {
    return { cgroup: null, env: { [MARK]: randomBytes(8).toString('hex') }, command: (file, args) => ({ file, args }) };
  }

  async members(container: Container, leader: Member): Promise<Member[]> {
    const [table, environments] = await Promise.all([psTable(), psEnvironments()]);
    return membersOf(table, environments, container.env[MARK], leader);
  }

  async stop(container: Container, leader: Member, exited: Promise<unknown>, graceMs: number): Promise<string[]> {
    const deadline = Date.now() + graceMs;
    const tree = await this.members(container, leader);
    const group = tree.some((m) => m.pid === leader.pid) ? leader.pid : null;
    signal(tree, group, 'SIGTERM');
    const inTime = (await settles(exited, graceMs)) && (await allGone(tree, deadline));
    if (!inTime) await killSame(tree, group);
    await exited;
    // What outlived the leader goes too, and whatever the mark names now (forked during the grace period).
    const last = [...tree, ...(await this.members(container, { pid: leader.pid, startTime: null }))];
    await killSame(last, group);
    await allGone(last, Date.now() + KILLED_LIMIT_MS);
    return (await running(last)).map((m) => `pid ${m.pid} still runs`);
  }
}

/**
 * The leader's group while its pid is still its own (or names no process: then no new process is given that pid
 * while the group has members), every process with the mark, and their descendants.
 */
export function membersOf(table: ProcessEntry[], environments: Array<{ pid: number; text: string }>, mark: string | undefined, leader: Member): Member[] {
  const byPid = new Map(table.map((p) => [p.pid, p]));
  const now = byPid.get(leader.pid);
  const ours = !now || (leader.startTime !== null && now.startTime === leader.startTime);
  const tree = new Set<number>();
  if (ours) for (const p of table) if (p.pgid === leader.pid || p.pid === leader.pid) tree.add(p.pid);
  if (mark) {
    const marked = new RegExp(`(?:^|\\s)${MARK}=${mark}(?:\\s|$)`);
    for (const { pid, text } of environments) if (marked.test(text)) tree.add(pid);
  }
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of table) {
      if (!tree.has(p.pid) && tree.has(p.ppid)) {
        tree.add(p.pid);
        grew = true;
      }
    }
  }
  tree.delete(process.pid);
  return [...tree].filter((pid) => byPid.has(pid)).map((pid) => ({ pid, startTime: byPid.get(pid)!.startTime }));
}

function signal(members: Member[], group: number | null, sig: NodeJS.Signals): void {
  if (group !== null) send(-group, sig);
  for (const m of members) send(m.pid, sig);
}

/** SIGKILL to each member that is still the process it was (one ps), and to the leader's group. */
async function killSame(members: Member[], group: number | null): Promise<void> {
  const now = new Map((await psTable(members.map((m) => m.pid))).map((p) => [p.pid, p.startTime]));
  signal(members.filter((m) => now.get(m.pid) === m.startTime), group, 'SIGKILL');
}

function send(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // exited meanwhile
  }
}

async function settles(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return Promise.race([promise.then(() => true), delay(ms, false, { ref: false })]);
}

/** Polls (one ps each time) until none of `members` runs as itself (a zombie has finished), or the deadline. */
async function allGone(members: Member[], deadline: number): Promise<boolean> {
  for (;;) {
    if ((await running(members)).length === 0) return true;
    if (Date.now() >= deadline) return false;
    await delay(EXIT_POLL_MS);
  }
}

/** The members still running as themselves: same start time, not a zombie. */
export async function running(members: Member[]): Promise<Member[]> {
  if (members.length === 0) return [];
  const text = await run('ps', ['-p', members.map((m) => m.pid).join(','), '-o', 'pid=,stat=']);
  const live = new Set(text.split('\n').flatMap((line) => {
    const [pid, stat] = line.trim().split(/\s+/);
    return pid && stat && !stat.startsWith('Z') ? [Number(pid)] : [];
  }));
  return members.filter((m) => live.has(m.pid));
}
