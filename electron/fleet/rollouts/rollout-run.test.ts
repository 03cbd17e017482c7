// A rollout's record across a broker outage: a write whose answer the outage cut is not waited for once the link is
// back (its timeout is seconds away, and the other viewers would take the rollout for interrupted meanwhile), and a
// cut write that did land is known as this run's own, not taken for another viewer's.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RolloutRecord } from '../../cluster/store/bodies.ts';
import { FileRecords } from '../../cluster/store/records.ts';
import { tempDir } from '../../core/testing/fixtures.ts';
import { until } from '../../agent/test-agent.ts';
import { RolloutRun } from './rollout-run.ts';

const HEARTBEAT_MS = 60_000;

function record(): RolloutRecord {
  return {
    rollout: {
      id: 'r1', backend: 'echo', version: '2.0.0', on: 'all', maxParallel: 1, state: 'running', startedAt: new Date().toISOString(), finishedAt: null,
      coordinator: { id: 'c0ffee0000000001', name: 'desk' }, interrupted: null, nodes: [{ id: 'a0a0a0a0a0a0a0a0', name: 'n1', step: 'pending', reason: null, from: null, to: null }],
    },
    heartbeatMs: HEARTBEAT_MS,
    previous: null,
    beat: 0,
  };
}

/** The store, with its next write held: never answered, and landed or not as `lands` says. */
async function heldStore(dir: string) {
  const store = new FileRecords<RolloutRecord>(join(dir, 'rollouts.json'), (v) => v.rollout.id, { id: 'home', publicKey: 'home' }, (raw) => raw as RolloutRecord);
  const held = { next: false, lands: false, writes: 0 };
  const update = store.update.bind(store);
  store.update = async (key, value, revision) => {
    held.writes++;
    if (!held.next) return update(key, value, revision);
    held.next = false;
    if (held.lands) await update(key, value, revision);
    return new Promise<number>(() => undefined);
  };
  return { store, held };
}

for (const lands of [false, true]) {
  test(`a write cut by an outage (${lands ? 'landed' : 'lost'}) is not waited for once the link is back, and the run goes on`, async (t) => {
    const dir = await tempDir('rollout-run');
    const { store, held } = await heldStore(dir);
    const revision = await store.create('r1', record());
    const run = new RolloutRun(record(), revision, { records: store, heartbeatMs: HEARTBEAT_MS, onRelease: () => undefined });
    // The run first: what it still writes would land in a folder being removed.
    t.after(() => {
      run.release();
      return rm(dir, { recursive: true, force: true, maxRetries: 3 });
    });

    held.next = true;
    held.lands = lands;
    run.mark(run.rollout.nodes[0]!, 'upgrading', null);
    await until('the write held', async () => (held.writes === 1 ? true : undefined), 2000);
    run.mark(run.rollout.nodes[0]!, 'upgraded', null);
    run.relinked();
    await until('the record written again', async () => (store.get('r1')?.value.rollout.nodes[0]?.step === 'upgraded' ? true : undefined), 2000);
    assert.equal(run.lost, false, lands ? 'its own landed write is not taken for another viewer\'s' : 'the run goes on');

    run.mark(run.rollout.nodes[0]!, 'upgraded', 'and again');
    await until('a later write lands', async () => (store.get('r1')?.value.rollout.nodes[0]?.reason === 'and again' ? true : undefined), 2000);
    assert.equal(run.lost, false);
  });
}

test("a record another viewer wrote over ends the run here: it is lost, not written over", async (t) => {
  const dir = await tempDir('rollout-run');
  const { store } = await heldStore(dir);
  const revision = await store.create('r1', record());
  const run = new RolloutRun(record(), revision, { records: store, heartbeatMs: HEARTBEAT_MS, onRelease: () => undefined });
  t.after(() => {
    run.release();
    return rm(dir, { recursive: true, force: true, maxRetries: 3 });
  });
  const theirs = record();
  theirs.rollout.coordinator = { id: 'beef000000000002', name: 'ops' };
  await store.update('r1', theirs, revision);
  run.mark(run.rollout.nodes[0]!, 'upgraded', null);
  await until('the run lost', async () => (run.lost ? true : undefined), 2000);
  assert.equal(store.get('r1')?.value.rollout.coordinator.name, 'ops');
});
