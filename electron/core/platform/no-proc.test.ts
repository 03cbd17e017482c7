// The proof that the POSIX layer needs no /proc: every question of the layer, asked by a process under strace, and
// no file under /proc/<pid>/ (nor the /proc listing) opened, stat'ed or read as a link by that process itself. Its
// children (ps, lsof) read /proc on Linux, as they read the kernel's tables on macOS: they are not counted.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { procReadsOf, programsRun, requireStrace, straceArgs } from './testing/strace.ts';
import { TS_NODE } from '../testing/ts-node.ts';

const workout = join(import.meta.dirname, 'testdata', 'posix-workout.ts');
// A supervisor's stop of a backend with children and the LocalAI server link's process search (localai imports core,
// not the other way round: only its path is named here).
const stopWorkout = join(import.meta.dirname, '..', '..', 'localai', 'server', 'testdata', 'no-proc-workout.ts');

function traced(layer: string, check: (traces: string, pid: number, summary: string) => void, file = workout): void {
  const traces = mkdtempSync(join(tmpdir(), 'hangar-strace-'));
  try {
    const run = spawnSync('strace', straceArgs(traces, [process.execPath, ...TS_NODE, file]), { env: { ...process.env, HANGAR_PLATFORM: layer }, encoding: 'utf8', timeout: 240_000 });
    assert.equal(run.status, 0, `the workout ran under strace: ${run.stderr}`);
    const [pid, summary] = run.stdout.trim().split('\n');
    check(traces, Number(pid), summary!);
  } finally {
    rmSync(traces, { recursive: true, force: true });
  }
}

test('under HANGAR_PLATFORM=posix, the process asking reads no /proc/<pid>/ file itself', { timeout: 300_000 }, () => {
  requireStrace();
  traced('posix', (traces, pid, summary) => {
    const result = JSON.parse(summary) as { layer: string; processes: number; cwds: number; listener: number; members: number };
    assert.equal(result.layer, 'posix');
    assert.ok(result.processes > 0 && result.cwds > 0 && result.members > 0, `every question was answered: ${summary}`);
    assert.equal(result.listener, pid, 'its own listener was found');
    assert.ok(programsRun(traces).has('lsof') && programsRun(traces).has('ps'), 'it asked ps and lsof');
    const { threads, reads } = procReadsOf(traces, pid);
    assert.ok(threads > 1, `the process's threads are told from its children (${threads} found)`);
    assert.deepEqual(reads, []);
  });
});

test('under HANGAR_PLATFORM=posix, a supervisor stopping a backend with children, and the LocalAI link searching for its processes, read no /proc/<pid>/ file themselves', { timeout: 300_000 }, () => {
  requireStrace();
  traced('posix', (traces, pid, summary) => {
    const result = JSON.parse(summary) as { layer: string; members: number; left: number; found: number; server: boolean };
    assert.equal(result.layer, 'posix');
    assert.ok(result.members >= 3, `the backend and its two children were its tree before the stop: ${summary}`);
    assert.equal(result.left, 0, 'the stop ended all of them');
    assert.ok(result.found >= 1 && result.server, `the link's search found the backend and its port's listener: ${summary}`);
    assert.deepEqual(procReadsOf(traces, pid).reads, []);
  }, stopWorkout);
});

test('the same proof sees a /proc/<pid>/ read when one is made (under the linux layer)', { timeout: 300_000 }, () => {
  requireStrace();
  traced('linux', (traces, pid) => assert.ok(procReadsOf(traces, pid).reads.length > 0, 'the linux layer reads /proc/<pid>/ and the filter says so'));
});
