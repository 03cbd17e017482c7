// The proof that the POSIX layer needs no /proc: every question of the layer, asked by a process under strace, and
// no file under /proc/<pid>/ (nor the /proc listing) opened, stat'ed or read as a link by that process itself. Its
// children (ps, lsof) read /proc on Linux, as they read the kernel's tables on macOS: they are not counted.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const workout = join(import.meta.dirname, 'testdata', 'posix-workout.ts');
/** Every way to read a file or its link; clone, to tell the process's own threads from the processes it starts. */
const TRACED = 'trace=openat,open,statx,newfstatat,stat,lstat,readlink,readlinkat,clone,clone3';

/**
 * The lines of the traced process's own threads (not of the processes it started, nor theirs) that name another
 * process's /proc entry or the /proc listing. Its threads are the tids its own threads cloned with CLONE_THREAD.
 */
function procReadsOf(traceDir: string, pid: number): { threads: number; reads: string[] } {
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

test('under HANGAR_PLATFORM=posix, the process asking reads no /proc/<pid>/ file itself', { timeout: 300_000 }, () => {
  const which = spawnSync('strace', ['-V']);
  assert.ok(!which.error, 'strace is NOT INSTALLED: the proof that the POSIX layer reads no /proc cannot run (apt-get install strace; .ci/run installs it)');
  const traces = mkdtempSync(join(tmpdir(), 'hangar-strace-'));
  try {
    const run = spawnSync('strace', ['-f', '-ff', '-o', join(traces, 'trace'), '-e', TRACED, process.execPath, '--import', 'tsx', workout], {
      env: { ...process.env, HANGAR_PLATFORM: 'posix' },
      encoding: 'utf8',
      timeout: 240_000,
    });
    assert.equal(run.status, 0, `the workout ran under strace: ${run.stderr}`);
    const [pid, summary] = run.stdout.trim().split('\n');
    const result = JSON.parse(summary!) as { layer: string; processes: number; cwds: number; listener: number; members: number };
    assert.equal(result.layer, 'posix');
    assert.ok(result.processes > 0 && result.cwds > 0 && result.members > 0, `every question was answered: ${summary}`);
    assert.equal(result.listener, Number(pid), 'its own listener was found');
    const { threads, reads } = procReadsOf(traces, Number(pid));
    assert.ok(threads > 1, `the process's threads are told from its children (${threads} found)`);
    assert.deepEqual(reads, []);
  } finally {
    rmSync(traces, { recursive: true, force: true });
  }
});

test('the same proof sees a /proc/<pid>/ read when one is made (under the linux layer)', { timeout: 300_000 }, () => {
  const traces = mkdtempSync(join(tmpdir(), 'hangar-strace-'));
  try {
    const run = spawnSync('strace', ['-f', '-ff', '-o', join(traces, 'trace'), '-e', TRACED, process.execPath, '--import', 'tsx', workout], {
      env: { ...process.env, HANGAR_PLATFORM: 'linux' },
      encoding: 'utf8',
      timeout: 240_000,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.ok(procReadsOf(traces, Number(run.stdout.split('\n')[0])).reads.length > 0, 'the linux layer reads /proc/<pid>/ and the filter says so');
  } finally {
    rmSync(traces, { recursive: true, force: true });
  }
});
