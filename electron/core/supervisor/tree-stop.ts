// Ending all of one backend process: what it is (process-tree.ts) is read once, before the first signal; SIGTERM
// goes to all of it, SIGKILL to what is left after the grace period and to whatever outlived the leader; its cgroup
// goes last.
import { setTimeout as delay } from 'node:timers/promises';
import type { Cgroups } from './cgroups.ts';
import { processTree, signalGroup, signalTree, treeAlive, type Leader, type TreeMember } from './process-tree.ts';

const EXIT_POLL_MS = 10;

/**
 * SIGTERM to the whole tree; SIGKILL after `graceMs`, or to what remains once `exited` (the leader's end) settles.
 * `tree`: the leader's processes when the caller read them already (still before any signal).
 */
export async function stopTree(leader: Leader, exited: Promise<unknown>, graceMs: number, cgroups: Cgroups, tree = processTree(leader)): Promise<void> {
  const deadline = Date.now() + graceMs;
  signalAll(leader, tree, 'SIGTERM');
  const inTime = (await settlesWithin(exited, graceMs)) && (await waitUntil(() => treeAlive(tree).length === 0, deadline));
  if (!inTime) killAll(leader, tree, cgroups);
  await exited;
  // Members of the group, the session, the cgroup and the tree that outlived the leader (its own children) go too.
  killAll(leader, tree, cgroups);
  await cgroups.release(leader.cgroup);
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

/** Polls `done` until it holds (true) or the deadline passes (false). */
async function waitUntil(done: () => boolean, deadline: number): Promise<boolean> {
  while (!done()) {
    if (Date.now() >= deadline) return false;
    await delay(EXIT_POLL_MS);
  }
  return true;
}
