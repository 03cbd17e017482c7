// How the POSIX layer finds a backend's processes without cgroups (macOS, or forced on Linux): each backend leads a
// process group of its own (it is started with setsid) and carries a mark in its environment that everything it
// forks inherits. A double fork with setsid leaves the group and, once its middle process exits, the parent chain
// too, but keeps its environment. A process that also clears its environment is not found. The supervisor stops
// what this finds (tree-stop.ts), all of it read from one `ps` table and one `ps e` before any signal.
import type { Member, ProcessEntry, ProcessTracking } from './types.ts';

export const MARK = 'HANGAR_CONTAINER';
/**
 * The supervisor's way: its backend's first process marks itself with its own pid before it becomes the backend, so
 * a backend's mark is its leader's pid and nothing has to be kept to find its processes again.
 */
export const MARK_LEADER = `export ${MARK}=$$`;

export const LEADER_TRACKING: ProcessTracking = {
  mechanism: 'process-group',
  description: `no cgroups here: each backend leads a process group of its own and carries ${MARK}=<its pid> in its environment; a stop ends the group, every descendant and every process that carries the mark (a process that leaves all three, clearing its environment, is not found)`,
};

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
