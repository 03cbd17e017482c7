// What "a backend's processes" are: its process group and every descendant of it by parent links, so children that
// left the group with setsid go too. Read from /proc BEFORE any signal: a signalled parent's orphans are re-parented
// to init and no walk can find them afterwards.
import { readdirSync, readFileSync } from 'node:fs';
import { isSameProcess, processStartTime } from './identity.ts';

/** One process of a tree, named by pid + start time so a pid recycled meanwhile is never signalled. */
export interface TreeMember {
  pid: number;
  startTime: string | null;
}

/** The members of process group `pgid` (when `group`) or the process `pid` alone, plus all their descendants. */
export function processTree(pid: number, options: { group: boolean }): TreeMember[] {
  if (process.platform !== 'linux') return [];
  const links = readLinks();
  const tree = new Set<number>([pid]);
  if (options.group) for (const [member, { pgrp }] of links) if (pgrp === pid) tree.add(member);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [child, { ppid }] of links) {
      if (!tree.has(child) && tree.has(ppid)) {
        tree.add(child);
        grew = true;
      }
    }
  }
  return [...tree].map((member) => ({ pid: member, startTime: processStartTime(member) }));
}

/** Signals each member that is still the process it was when the tree was read. */
export function signalTree(tree: TreeMember[], signal: NodeJS.Signals): void {
  for (const member of tree) if (isSameProcess(member.pid, member.startTime)) signalProcess(member.pid, signal);
}

/** Signals a process group; falls back to the lone process when pid leads no group (a legacy entry). */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    signalProcess(pid, signal);
  }
}

export function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

export function treeAlive(tree: TreeMember[]): TreeMember[] {
  return tree.filter((member) => isSameProcess(member.pid, member.startTime));
}

/** pid -> its parent and process group, for every process /proc shows. */
function readLinks(): Map<number, { ppid: number; pgrp: number }> {
  const links = new Map<number, { ppid: number; pgrp: number }>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/stat`, 'latin1');
    } catch {
      continue;
    }
    // comm (field 2) may hold spaces and parentheses: fields after the last ')' start at field 3 (state).
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    links.set(pid, { ppid: Number(fields[1]), pgrp: Number(fields[2]) });
  }
  return links;
}
