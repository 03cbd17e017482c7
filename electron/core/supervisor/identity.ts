// Directory and process identity: what "the same directory" and "the same process" mean to the supervisor.
import { stat } from 'node:fs/promises';
import { readKernelFile } from './kernel-file.ts';

/** A directory's identity: the path it was seen at plus its device and inode (bigint: exact on every filesystem). */
export interface DirIdentity {
  dir: string;
  dev: bigint;
  ino: bigint;
}

/** The identity of `dir` now, or null when the path is gone or not a directory. */
export async function dirIdentity(dir: string): Promise<DirIdentity | null> {
  try {
    const st = await stat(dir, { bigint: true });
    return st.isDirectory() ? { dir, dev: st.dev, ino: st.ino } : null;
  } catch {
    return null;
  }
}

export function sameInode(a: { dev: bigint; ino: bigint }, b: { dev: bigint; ino: bigint }): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** Why `recorded` is no longer the directory at its path, or null when it still is. */
export async function directoryChange(recorded: DirIdentity): Promise<string | null> {
  const now = await dirIdentity(recorded.dir);
  if (!now) return `directory ${recorded.dir} is gone`;
  if (!sameInode(now, recorded)) return `directory ${recorded.dir} was replaced (inode changed)`;
  return null;
}

export interface ProcStat {
  /** One-letter state from /proc/PID/stat (R, S, D, Z, ...). */
  state: string;
  ppid: number;
  /** Field 5: the process group. */
  pgrp: number;
  /** Field 6: the session. */
  session: number;
  /** Field 22: start time in clock ticks since boot. With the pid it names one process for the life of the boot. */
  startTime: string;
}

/** Reads /proc/PID/stat; null when the process does not exist (or there is no /proc). */
export function procStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readKernelFile(`/proc/${pid}/stat`);
  } catch {
    return null;
  }
  return parseStat(text);
}

/** One line of /proc/PID/stat. */
export function parseStat(text: string): ProcStat | null {
  // comm (field 2) may hold spaces and parentheses: fields after the last ')' start at field 3.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const [state, ppid, pgrp, session] = fields;
  const startTime = fields[22 - 3];
  return state && startTime ? { state, ppid: Number(ppid), pgrp: Number(pgrp), session: Number(session), startTime } : null;
}

/** True while the process runs (a zombie has finished: it only waits to be reaped). */
export function isAlive(pid: number): boolean {
  if (process.platform === 'linux') {
    const st = procStat(pid);
    return st !== null && st.state !== 'Z' && st.state !== 'X';
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The start time to record for a fresh process, or null where /proc is missing (macOS, Windows). */
export function processStartTime(pid: number): string | null {
  return procStat(pid)?.startTime ?? null;
}
