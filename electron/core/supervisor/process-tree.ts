// What "a backend's processes" are on Linux (the linux platform layer's tree): its cgroup's members (where there is
// one), its process group, its session, and every descendant of those by parent links, so children that left the
// group with setsid go too. Read from /proc BEFORE any signal: a signalled parent's orphans are re-parented and no
// walk can find them afterwards.
import { readdirSync } from 'node:fs';
import { setImmediate as setImmediatePromise } from 'node:timers/promises';
import { members } from './cgroups.ts';
import { parseStat, type ProcStat } from './identity.ts';
import { readKernelFile } from './kernel-file.ts';
import type { Leader, Member } from '../platform/types.ts';

/** One read of /proc, indexed by parent, group and session: several leaders' trees are read from it. */
export interface ProcessIndex {
  table: Map<number, ProcStat>;
  children: Map<number, number[]>;
  groups: Map<number, number[]>;
  sessions: Map<number, number[]>;
}

export function indexProcesses(table = readProcessTable()): ProcessIndex {
  const index: ProcessIndex = { table, children: new Map(), groups: new Map(), sessions: new Map() };
  const add = (map: Map<number, number[]>, key: number, pid: number) => {
    const list = map.get(key);
    if (list) list.push(pid);
    else map.set(key, [pid]);
  };
  for (const [pid, { ppid, pgrp, session }] of table) {
    add(index.children, ppid, pid);
    add(index.groups, pgrp, pid);
    add(index.sessions, session, pid);
  }
  return index;
}

/**
 * The leader's processes now: its cgroup's members, its group and session (while its pid is still its own), their
 * descendants; in the time its tree takes to walk, not the whole table's.
 */
export function processTree(leader: Leader, index = indexProcesses()): Member[] {
  if (process.platform !== 'linux') return [];
  const tree = new Set<number>(members(leader.cgroup));
  // A pid that names another process now names no group or session of the leader's (signals.ts, ownership()).
  const now = index.table.get(leader.pid);
  if (now === undefined || (leader.startTime !== null && now.startTime === leader.startTime)) {
    tree.add(leader.pid);
    for (const pid of index.groups.get(leader.pid) ?? []) tree.add(pid);
    for (const pid of index.sessions.get(leader.pid) ?? []) tree.add(pid);
  }
  const queue = [...tree];
  for (let i = 0; i < queue.length; i++) {
    for (const child of index.children.get(queue[i]!) ?? []) {
      if (tree.has(child)) continue;
      tree.add(child);
      queue.push(child);
    }
  }
  return [...tree].filter((pid) => index.table.has(pid)).map((pid) => ({ pid, startTime: index.table.get(pid)!.startTime }));
}

/** pid -> its /proc/PID/stat, for every process /proc shows (empty where there is no /proc). */
export function readProcessTable(): Map<number, ProcStat> {
  return new Map(procStats());
}

/** The same, read `slice` processes between turns of the event loop: a host with thousands of them never stalls. */
export async function readProcessTableYielding(slice: number): Promise<Map<number, ProcStat>> {
  const table = new Map<number, ProcStat>();
  for (const [pid, stat] of procStats()) {
    table.set(pid, stat);
    if (table.size % slice === 0) await setImmediatePromise();
  }
  return table;
}

function* procStats(): Generator<[number, ProcStat]> {
  if (process.platform !== 'linux') return;
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = parseStat(readKernelFile(`/proc/${pid}/stat`));
      if (stat) yield [pid, stat];
    } catch {
      // exited meanwhile
    }
  }
}
