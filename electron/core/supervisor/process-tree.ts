// What "a backend's processes" are on Linux (the linux platform layer's tree): its cgroup's members (where there is
// one), its process group, its session, and every descendant of those by parent links, so children that left the
// group with setsid go too. Read from /proc BEFORE any signal: a signalled parent's orphans are re-parented and no
// walk can find them afterwards.
import { readdirSync } from 'node:fs';
import { members } from './cgroups.ts';
import { ownership, parseStat, type ProcStat } from './identity.ts';
import { readKernelFile } from './kernel-file.ts';
import type { Leader, Member } from '../platform/types.ts';

/**
 * The leader's processes now: its cgroup's members, its group and session (while its pid is still its own), their
 * descendants. `table`: one read of /proc shared by several leaders' trees.
 */
export function processTree(leader: Leader, table = readProcessTable()): Member[] {
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
