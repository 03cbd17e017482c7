import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ProcessView } from '../../../shared/index.ts';
import { startingNote } from '../../../shared/process-text.ts';
import { humanDuration } from '../../../shared/progress.ts';
import { Supervisor } from './supervisor.ts';
import { makeHome, startUpstream, type EchoServer, writeRelayBackend, writeScriptBackend, type Home } from './test-helpers.ts';

// A GPU build may take minutes to answer Health. The relay backend here sleeps before it listens, as a build that
// imports torch would: a model's own limit below its start fails, the node's default waits, and once a start of that
// length was seen the backend is given twice as long whatever a later limit says, across restarts of the host.

const SLEEP_S = 2;
let home: Home;
let upstream: EchoServer;
let slow: { name: string; dir: string };

before(async () => {
  home = makeHome();
  upstream = await startUpstream(home.root);
  slow = slowBackend('slow', SLEEP_S);
});

/** A backend that sleeps `seconds` before it listens, as a build importing torch would. */
function slowBackend(name: string, seconds: number): { name: string; dir: string } {
  const backend = { name, dir: join(home.backendsDir, name) };
  writeRelayBackend(backend.dir, upstream.address);
  writeScriptBackend(backend.dir, `sleep ${seconds}\nRELAY_UPSTREAM=${upstream.address} exec perl "$(dirname "$0")/relay.pl" "$@"`);
  return backend;
}

after(async () => {
  await upstream.stop();
  home.cleanup();
});

async function openSupervisor(): Promise<Supervisor> {
  const supervisor = new Supervisor({ ...home, runtimeEnv: { HANGAR_NODE: process.execPath }, stopGraceMs: 1000 });
  await supervisor.start();
  return supervisor;
}

test('a slow start is given the node\'s limit, remembered, and twice its length after a restart of the host', async () => {
  let supervisor = await openSupervisor();
  try {
    supervisor.setStartTimeout(10 * 60_000, { slow: 1000 });
    await assert.rejects(supervisor.load(slow, 'hasty'), /within 1s: /, "the backend's own limit is over the node's");
    supervisor.setStartTimeout(10 * 60_000);
    await assert.rejects(
      supervisor.load(slow, 'hasty', { startTimeoutMs: 1000 }),
      /^HangarError: backend slow did not become ready for model hasty within 1s: port \d+ never accepted a connection$/,
    );

    const seen: ProcessView[] = [];
    supervisor.on('process', (view: ProcessView) => seen.push(view));
    await supervisor.load(slow, 'patient');
    assert.equal(supervisor.get('patient')?.state, 'ready');
    const starting = seen.find((v) => v.model === 'patient' && v.state === 'starting' && v.deadline);
    assert.ok(starting, 'the starting row says when Hangar gives up');
    const waits = Date.parse(starting.deadline!) - Date.parse(starting.startedAt);
    assert.ok(waits >= 9.9 * 60_000 && waits <= 10 * 60_000 + 1000, `the node's default is 10 minutes, got ${waits} ms`);
    assert.match(startingNote(starting, Date.parse(starting.startedAt) + 45_000, (at) => at) ?? '', /^starting for 45s \(gives up at \d{4}-.*Z\)$/);
    assert.equal(supervisor.get('patient')?.deadline, null, 'a ready row has no deadline');
    await supervisor.stop('patient');
  } finally {
    await supervisor.close({ stopAll: true });
  }

  const kept = JSON.parse(readFileSync(join(home.stateDir, 'start-times.json'), 'utf8')) as { start: Record<string, number> };
  assert.ok(kept.start.slow! >= SLEEP_S * 1000, `the longest start is kept: ${JSON.stringify(kept)}`);

  supervisor = await openSupervisor();
  try {
    const seen: ProcessView[] = [];
    supervisor.on('process', (view: ProcessView) => seen.push(view));
    await supervisor.load(slow, 'hasty', { startTimeoutMs: 1000 });
    assert.equal(supervisor.get('hasty')?.state, 'ready', 'the 1 s limit is raised to twice the start seen here');
    const starting = seen.find((v) => v.state === 'starting' && v.deadline)!;
    assert.equal(starting.longestMs, kept.start.slow);
    assert.ok(Date.parse(starting.deadline!) - Date.parse(starting.startedAt) >= 2 * kept.start.slow!);
    // The start seen before, however long a busy machine made it.
    const note = startingNote(starting, Date.parse(starting.startedAt) + 1000, (at) => at) ?? '';
    assert.ok(note.startsWith(`starting for 1s (longest start here ${humanDuration(kept.start.slow!)}; gives up at `), note);
  } finally {
    await supervisor.close({ stopAll: true });
  }
});

test('a stop cancels a start that would take minutes: the process goes and the load says a stop cancelled it', async () => {
  const glacial = slowBackend('glacial', 300);
  const supervisor = await openSupervisor();
  try {
    const starting = new Promise<ProcessView>((resolve) => {
      supervisor.on('process', (view: ProcessView) => {
        if (view.model === 'big' && view.state === 'starting') resolve(view);
      });
    });
    const load = supervisor.load(glacial, 'big');
    const loadFailed = assert.rejects(load, /^HangarError: model big: a stop cancelled it while starting \(pid \d+, spawned \d+s before\)$/);
    const { pid } = await starting;
    await supervisor.stop('big');
    await loadFailed;
    assert.throws(() => process.kill(pid, 0), /ESRCH/, 'the starting process is gone');
    assert.equal(supervisor.get('big'), null, 'the row goes with it');
  } finally {
    await supervisor.close({ stopAll: true });
  }
});

test("a model's LocalAI config gives it LocalAI's start limit: grpc.attempts × attempts_sleep_time", async () => {
  const sleepy = slowBackend('sleepy', 300);
  // As LocalAI reads them: any *.yaml in the models directory, a list of configs too, matched by name.
  writeFileSync(join(home.modelsDir, 'several.yaml'), '- name: other\n  grpc: {attempts: 500}\n- name: quick\n  backend: sleepy\n  grpc:\n    attempts: 1\n    attempts_sleep_time: 1\n');
  writeFileSync(join(home.modelsDir, '.quick.yaml'), 'name: quick\ngrpc: {attempts: 900}\n');
  const supervisor = await openSupervisor();
  try {
    const started = Date.now();
    await assert.rejects(supervisor.load(sleepy, 'quick'), /^HangarError: backend sleepy did not become ready for model quick within 1s: /);
    assert.ok(Date.now() - started < 60_000);
  } finally {
    await supervisor.close({ stopAll: true });
  }
});
