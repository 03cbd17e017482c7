// Running a process under strace and reading what it did (tests only): the proof that a layer reads no /proc/<pid>/.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Every way to read a file or its link; clone, to tell the process's own threads from the processes it starts. */
export const TRACED = 'trace=openat,open,statx,newfstatat,stat,lstat,readlink,readlinkat,clone,clone3,execve';

/** Fails, loudly, where strace is not installed: the proof cannot run without it, and must not pass silently. */
export function requireStrace(): void {
  const probe = spawnSync('strace', ['-V']);
  assert.ok(!probe.error, 'strace is NOT INSTALLED: the proof that the POSIX layer reads no /proc cannot run (apt-get install strace; .ci/run installs it)');
}

/** `strace -f -ff -o <dir>/trace` before `command`: one trace file per thread and process, named by its id. */
export function straceArgs(traceDir: string, command: string[]): string[] {
  return ['-f', '-ff', '-o', join(traceDir, 'trace'), '-e', TRACED, ...command];
}

/** The id of the traced process that exec'd a command line holding `text`, or null. */
export function tracedPid(traceDir: string, text: string): number | null {
  for (const name of readdirSync(traceDir)) {
    const first = readFileSync(join(traceDir, name), 'utf8').split('\n').find((l) => l.startsWith('execve(') && !l.includes('ENOENT'));
    if (first?.includes(text)) return Number(name.slice(name.lastIndexOf('.') + 1));
  }
  return null;
}

/** The programs the traced processes ran, by name (`lsof`, `ps`). */
export function programsRun(traceDir: string): Set<string> {
  const programs = new Set<string>();
  for (const name of readdirSync(traceDir)) {
    for (const line of readFileSync(join(traceDir, name), 'utf8').split('\n')) {
      const program = /^execve\("([^"]+)".* = 0$/.exec(line)?.[1];
      if (program) programs.add(program.slice(program.lastIndexOf('/') + 1));
    }
  }
  return programs;
}

/**
 * The lines of process `pid`'s own threads (not of the processes it started, nor theirs) that name another
 * process's /proc entry or the /proc listing. Its threads are the tids its own threads cloned with CLONE_THREAD.
 */
export function procReadsOf(traceDir: string, pid: number): { threads: number; reads: string[] } {
  const traces = new Map(readdirSync(traceDir).map((name) => [Number(name.slice(name.lastIndexOf('.') + 1)), readFileSync(join(traceDir, name), 'utf8').split('\n')]));
  const own = new Set([pid]);
  for (const tid of own) {
    for (const line of traces.get(tid) ?? []) {
      const thread = /^clone3?\(.*CLONE_THREAD.*\) = (\d+)$/.exec(line)?.[1];
      if (thread) own.add(Number(thread));
    }
  }
  const reads = [...own].flatMap((tid) => (traces.get(tid) ?? []).filter((l) => /"\/proc(\/\d+(\/[^"]*)?)?"/.test(l)).map((l) => `${tid}: ${l}`));
  return { threads: own.size, reads };
}
