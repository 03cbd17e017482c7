// Ending all of one backend process: what it is (process-tree.ts) is read once, before the first signal; SIGTERM
// goes to all of it, SIGKILL to what is left after the grace period and to whatever outlived the leader; its cgroup
// goes last. A stop is over once its cgroup has emptied and the processes that had escaped the leader's parent chain
// before it (a double fork) are out of the process table, zombies included: those are init's to reap, and init may
// take seconds. What is still there when the waits run out is said.
import { setTimeout as delay } from 'node:timers/promises';
import { untilEmpty, type Cgroups } from './cgroups.ts';
import { ownership, procStat } from './identity.ts';
import { readKernelFile } from './kernel-file.ts';
import { processTree, signalGroup, signalTree, treeAlive, type Leader, type TreeMember } from './process-tree.ts';

const EXIT_POLL_MS = 10;
/** How long a stop waits for its ended processes to be reaped by their parents (init reaps on its own schedule). */
const REAP_LIMIT_MS = 5000;
/** No event tells that another process reaped one: its /proc entry is looked at this often. */
const REAP_POLL_MS = 20;

/**
 * SIGTERM to the whole tree; SIGKILL after `graceMs`, or to what remains once `exited` (the leader's end) settles.
 * `tree`: the leader's processes when the caller read them already (still before any signal). Resolves once none of
 * its processes is left, or with a line for each one still there when the waits ran out.
 */
export async function stopTree(leader: Leader, exited: Promise<unknown>, graceMs: number, cgroups: Cgroups, tree = processTree(leader)): Promise<string[]> {
  const deadline = Date.now() + graceMs;
  const escaped = orphansOf(leader, tree);
  signalAll(leader, tree, 'SIGTERM');
  const inTime = (await settlesWithin(exited, graceMs)) && (await allEnded(leader, tree, deadline));
  if (!inTime) killAll(leader, tree, cgroups);
  await exited;
  // Members of the group, the session, the cgroup and the tree that outlived the leader (its own children) go too.
  killAll(leader, tree, cgroups);
  const running = await cgroups.release(leader.cgroup);
  const left = running.map((pid) => `pid ${pid}${commandName(pid)} still runs in the backend's cgroup`);
  for (const member of await untilReaped(escaped.filter((m) => !running.includes(m.pid)), REAP_LIMIT_MS)) left.push(unreaped(member));
  return left;
}

/** Whether the whole tree ended before the deadline: told by its cgroup's populated-0 event where it has one. */
async function allEnded(leader: Leader, tree: TreeMember[], deadline: number): Promise<boolean> {
  if (leader.cgroup) await untilEmpty(leader.cgroup, Math.max(0, deadline - Date.now()));
  return waitUntil(() => treeAlive(tree).length === 0, deadline);
}

/** The members (the leader aside) whose parent is no member: they left the leader's parent chain (a double fork). */
function orphansOf(leader: Leader, tree: TreeMember[]): TreeMember[] {
  const pids = new Set(tree.map((m) => m.pid));
  return tree.filter((m) => {
    const parent = procStat(m.pid)?.ppid;
    return m.pid !== leader.pid && parent !== undefined && !pids.has(parent);
  });
}

/**
 * The leader has ended by itself: whatever is left of it (it may hold its pipes and its port) is killed now. Where
 * its cgroup went at once, /proc is not read: on a crash this runs before the restart, and the read grows with the
 * machine's process count. Elsewhere the tree is read before any signal, as in a stop.
 */
export function killRemains(leader: Leader, cgroups: Cgroups): void {
  if (cgroups.kill(leader.cgroup)) signalGroup(leader, 'SIGKILL');
  else killAll(leader, processTree(leader), cgroups);
}

/** Polls `gone` until it holds. */
export async function waitForExit(gone: () => boolean): Promise<void> {
  while (!gone()) await delay(EXIT_POLL_MS);
}

export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = delay(ms, false, { ref: false });
  return Promise.race([promise.then(() => true), timer]);
}

function signalAll(leader: Leader, tree: TreeMember[], signal: NodeJS.Signals): void {
  signalGroup(leader, signal);
  signalTree(tree, signal);
}

function killAll(leader: Leader, tree: TreeMember[], cgroups: Cgroups): void {
  signalAll(leader, tree, 'SIGKILL');
  cgroups.kill(leader.cgroup);
}

/** Waits until no member is in the process table (a zombie still is), or `limitMs` has passed: those left. */
async function untilReaped(tree: TreeMember[], limitMs: number): Promise<TreeMember[]> {
  const present = () => tree.filter((m) => ownership(m.pid, m.startTime) === 'ours');
  await waitUntil(() => present().length === 0, Date.now() + limitMs, REAP_POLL_MS);
  return present();
}

/** An escaped process a stop could not see reaped, as the model's log says it. */
function unreaped(member: TreeMember): string {
  const st = procStat(member.pid);
  const how = !st ? 'was reaped just now' : st.state === 'Z' ? `has ended, but its parent (pid ${st.ppid}) has not reaped it yet` : 'still runs';
  return `pid ${member.pid}${commandName(member.pid)} ${how}`;
}

/** " (name)" of a process, or '' once it is gone. */
function commandName(pid: number): string {
  try {
    return ` (${readKernelFile(`/proc/${pid}/comm`, 'utf8').trim()})`;
  } catch {
    return '';
  }
}

/** Polls `done` until it holds (true) or the deadline passes (false). */
async function waitUntil(done: () => boolean, deadline: number, everyMs = EXIT_POLL_MS): Promise<boolean> {
  while (!done()) {
    if (Date.now() >= deadline) return false;
    await delay(everyMs);
  }
  return true;
}
