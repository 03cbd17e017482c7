import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ProcessView } from '../../../shared/index.ts';
import { startingNote } from '../../../shared/process-text.ts';
import { Supervisor } from './supervisor.ts';
import { makeHome, startEchoServer, writeEcho, writeRelayBackend, writeScriptBackend, type Home } from './test-helpers.ts';

// A GPU build may take minutes to answer Health. The relay backend here sleeps before it listens, as a build that
// imports torch would: a model's own limit below its start fails, the node's default waits, and once a start of that
// length was seen the backend is given twice as long whatever a later limit says, across restarts of the host.

const SLEEP_S = 2;
let home: Home;
let upstream: Awaited<ReturnType<typeof startEchoServer>>;
let slow: { name: string; dir: string };

before(async () => {
  home = makeHome();
  const upstreamDir = join(home.root, 'upstream');
  await writeEcho(upstreamDir, 'upstream');
  upstream = await startEchoServer(upstreamDir);
  slow = { name: 'slow', dir: join(home.backendsDir, 'slow') };
  writeRelayBackend(slow.dir, upstream.address);
  writeScriptBackend(slow.dir, `sleep ${SLEEP_S}\nRELAY_UPSTREAM=${upstream.address} exec perl "$(dirname "$0")/relay.pl" "$@"`);
});

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
    assert.match(startingNote(starting, Date.parse(starting.startedAt) + 1000, (at) => at) ?? '', /^starting for 1s \(longest start here [23]s; gives up at /);
  } finally {
    await supervisor.close({ stopAll: true });
  }
});
