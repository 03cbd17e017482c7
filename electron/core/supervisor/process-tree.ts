// What "a backend's processes" are: its cgroup's members (where there is one), its process group, its session, and
// every descendant of those by parent links, so children that left the group with setsid go too. Read from /proc
// BEFORE any signal: a signalled parent's orphans are re-parented and no walk can find them afterwards.
// Every signal goes to a process only while it is still the one recorded (pid + start time): a pid the OS gave to
// an unrelated process meanwhile is never signalled, nor the group or session that pid would name.
import { readdirSync } from 'node:fs';
import { members } from './cgroups.ts';
import { isSameProcess, ownership, parseStat, type ProcStat } from './identity.ts';
import { readKernelFile } from './kernel-file.ts';

/** A backend process as recorded at its spawn: the leader of its process group and session, and its cgroup. */
export interface Leader {
  pid: number;
  startTime: string | null;
  cgroup: string | null;
}

/** One process of a tree, named by pid + start time so a pid recycled meanwhile is never signalled. */
export interface TreeMember {
  pid: number;
  startTime: string | null;
}

/**
 * The leader's processes now: its cgroup's members, its group and session (while its pid is still its own), their
 * descendants. `table`: one read of /proc shared by several leaders' trees.
 */
export function processTree(leader: Leader, table = readProcessTable()): TreeMember[] {
  if (process.platform !== 'linux') return [];
  const tree = new Set<number>(members(leader.cgroup));
  // A pid that names another process now names no group or session of the leader's.
  if (ownership(leader.pid, leader.startTime) !== 'other') {
    tree.add(leader.pid);
    for (const [pid, { pgrp, session }] of table) if (pgrp === leader.pid || session === leader.pid) tree.add(pid);
  }
  for (let grew = true; grew; ) {
    grew = false;
    for (const [child, { ppid }] of table) {
      if (!tree.has(child) && tree.has(ppid)) {
        tree.add(child);
        grew = true;
      }
    }
  }
  return [...tree].filter((pid) => table.has(pid)).map((pid) => ({ pid, startTime: table.get(pid)!.startTime }));
}

/** Signals each member that is still the process it was when the tree was read. */
export function signalTree(tree: TreeMember[], signal: NodeJS.Signals): void {
  for (const member of tree) signalIfSame(member, signal);
}

/**
 * Signals the leader's process group, unless its pid names another process now; a leader that leads no group (a
 * legacy entry) is signalled alone, and only while it is still itself.
 */
export function signalGroup(leader: Leader, signal: NodeJS.Signals): void {
  if (ownership(leader.pid, leader.startTime) === 'other') return;
  try {
    process.kill(-leader.pid, signal);
  } catch {
    signalIfSame(leader, signal);
  }
}

/** Signals the process while it is the one recorded (pid + start time). */
export function signalIfSame(member: TreeMember, signal: NodeJS.Signals): void {
  if (!isSameProcess(member.pid, member.startTime)) return;
  try {
    process.kill(member.pid, signal);
  } catch {
    // exited meanwhile
  }
}

export function treeAlive(tree: TreeMember[]): TreeMember[] {
  return tree.filter((member) => isSameProcess(member.pid, member.startTime));
}

/** pid -> its /proc/PID/stat, for every process /proc shows (empty where there is no /proc). */
export function readProcessTable(): Map<number, ProcStat> {
  const table = new Map<number, ProcStat>();
  if (process.platform !== 'linux') return table;
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = parseStat(readKernelFile(`/proc/${pid}/stat`));
      if (stat) table.set(pid, stat);
    } catch {
      // exited meanwhile
    }
  }
  return table;
}
