// Ending all of one backend process: what it is (the platform layer's tree) is read once, before the first signal;
// SIGTERM goes to all of it, SIGKILL to what is left after the grace period and to whatever outlived the leader; its
// cgroup goes last. A stop is over once its cgroup has emptied and the processes that had escaped the leader's parent
// chain before it (a double fork) are out of the process table, zombies included: those are init's to reap, and init
// may take seconds. What is still there when the waits run out is said.
import { basename } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Leader, Member, Platform } from '../platform/types.ts';
import { untilEmpty, type Cgroups } from './cgroups.ts';
import { alive, signalGroup, signalTree } from './signals.ts';

const EXIT_POLL_MS = 10;
/** How long a stop waits for its ended processes to be reaped by their parents (init reaps on its own schedule). */
const REAP_LIMIT_MS = 5000;
/** No event tells that another process reaped one: the process table is looked at this often. */
const REAP_POLL_MS = 20;

/** What a stop needs besides the leader: the platform layer it reads processes through, and the host's cgroups. */
export interface StopParts {
  platform: Platform;
  cgroups: Cgroups;
}

/**
 * SIGTERM to the whole tree; SIGKILL after `graceMs`, or to what remains once `exited` (the leader's end) settles.
 * `tree`: the leader's processes when the caller read them already (still before any signal). Resolves once none of
 * its processes is left, or with a line for each one still there when the waits ran out.
 */
export async function stopTree(parts: StopParts, leader: Leader, exited: Promise<unknown>, graceMs: number, tree?: Member[]): Promise<string[]> {
  const { platform, cgroups } = parts;
  tree ??= (await platform.trees([leader]))[0]!;
  const deadline = Date.now() + graceMs;
  const escaped = await orphansOf(platform, leader, tree);
  await signalAll(platform, leader, tree, 'SIGTERM');
  const inTime = (await settlesWithin(exited, graceMs)) && (await allEnded(platform, leader, tree, deadline));
  if (!inTime) await killAll(parts, leader, tree);
  await exited;
  // Members of the group, the session, the cgroup and the tree that outlived the leader (its own children) go too.
  await killAll(parts, leader, tree);
  const running = await cgroups.release(leader.cgroup);
  const left = await Promise.all(running.map(async (pid) => `pid ${pid}${await commandName(platform, pid)} still runs in the backend's cgroup`));
  for (const member of await untilReaped(platform, escaped.filter((m) => !running.includes(m.pid)), REAP_LIMIT_MS)) left.push(await unreaped(platform, member));
  return left;
}

/** Whether the whole tree ended before the deadline: told by its cgroup's populated-0 event where it has one. */
async function allEnded(platform: Platform, leader: Leader, tree: Member[], deadline: number): Promise<boolean> {
  if (leader.cgroup) await untilEmpty(leader.cgroup, Math.max(0, deadline - Date.now()));
  return waitUntil(async () => (await alive(platform, tree)).length === 0, deadline);
}

/** The members (the leader aside) whose parent is no member: they left the leader's parent chain (a double fork). */
async function orphansOf(platform: Platform, leader: Leader, tree: Member[]): Promise<Member[]> {
  const pids = new Set(tree.map((m) => m.pid));
  const now = await platform.statuses(tree.filter((m) => m.pid !== leader.pid).map((m) => m.pid));
  return tree.filter((m) => {
    const parent = now.get(m.pid)?.ppid;
    return m.pid !== leader.pid && parent !== undefined && !pids.has(parent);
  });
}

/**
 * The leader has ended by itself: whatever is left of it (it may hold its pipes and its port) is killed now. Where
 * its cgroup went at once, the process table is not read: on a crash this runs before the restart, and the read
 * grows with the machine's process count. Elsewhere the tree is read before any signal, as in a stop.
 */
export async function killRemains(parts: StopParts, leader: Leader): Promise<void> {
  if (parts.cgroups.kill(leader.cgroup)) await signalGroup(parts.platform, leader, 'SIGKILL');
  else await killAll(parts, leader, (await parts.platform.trees([leader]))[0]!);
}

/** Polls `gone` until it holds. */
export async function waitForExit(gone: () => Promise<boolean>): Promise<void> {
  while (!(await gone())) await delay(EXIT_POLL_MS);
}

export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = delay(ms, false, { ref: false });
  return Promise.race([promise.then(() => true), timer]);
}

async function signalAll(platform: Platform, leader: Leader, tree: Member[], signal: NodeJS.Signals): Promise<void> {
  await signalGroup(platform, leader, signal);
  await signalTree(platform, tree, signal);
}

async function killAll(parts: StopParts, leader: Leader, tree: Member[]): Promise<void> {
  await signalAll(parts.platform, leader, tree, 'SIGKILL');
  parts.cgroups.kill(leader.cgroup);
}

/** Waits until no member is in the process table (a zombie still is), or `limitMs` has passed: those left. */
async function untilReaped(platform: Platform, tree: Member[], limitMs: number): Promise<Member[]> {
  const present = async () => {
    const now = await platform.statuses(tree.map((m) => m.pid));
    return tree.filter((m) => m.startTime !== null && now.get(m.pid)?.startTime === m.startTime);
  };
  if (tree.length === 0) return [];
  await waitUntil(async () => (await present()).length === 0, Date.now() + limitMs, REAP_POLL_MS);
  return present();
}

/** An escaped process a stop could not see reaped, as the model's log says it. */
async function unreaped(platform: Platform, member: Member): Promise<string> {
  const st = (await platform.statuses([member.pid])).get(member.pid);
  const how = !st ? 'was reaped just now' : st.zombie ? `has ended, but its parent (pid ${st.ppid}) has not reaped it yet` : 'still runs';
  return `pid ${member.pid}${await commandName(platform, member.pid)} ${how}`;
}

/** " (name)" of a process, or '' once it is gone. */
async function commandName(platform: Platform, pid: number): Promise<string> {
  const [entry] = await platform.processes([pid]);
  const program = entry?.command.split(' ')[0];
  return program ? ` (${basename(program)})` : '';
}

/** Polls `done` until it holds (true) or the deadline passes (false). */
async function waitUntil(done: () => Promise<boolean>, deadline: number, everyMs = EXIT_POLL_MS): Promise<boolean> {
  while (!(await done())) {
    if (Date.now() >= deadline) return false;
    await delay(everyMs);
  }
  return true;
}
