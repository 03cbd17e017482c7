import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BackendView, ProcessView } from '../../../shared/types.ts';
import { fromSnapshot, withBackend, withProcess, withoutBackend, withoutProcess } from './backends.ts';

function backend(name: string, processes: ProcessView[] = []): BackendView {
  return {
    name, kind: 'backend', runs: name, localai: [], leftover: null, kept: null, alias: null, version: '1.0.0', digest: null, sha256: null, uri: null, gallery: null, dir: `/b/${name}`,
    installedAt: null, metaBackendFor: null, upgradable: false, availableVersion: null, previous: null, broken: null, processes,
  };
}

function proc(model: string, backendName: string, pid = 100): ProcessView {
  return {
    model, backend: backendName, pid, port: 5000, dir: `/b/${backendName}`, startedAt: '2025-01-01T00:00:00.000Z',
    state: 'ready', cwd: 'ok', cwdReason: '', procCwd: null, loaded: true, policy: 'on-failure', restarts: 0, restartDelayMs: 1000, maxRestarts: 5, message: null,
    error: null, exit: null, cpu: null, rss: null,
  };
}

test('a process event replaces one process and leaves every row and model list untouched', () => {
  const state = fromSnapshot([backend('a', [proc('m1', 'a')]), backend('b', [proc('m2', 'b')])], []);
  const next = withProcess(state, { ...proc('m1', 'a', 101), cwd: 'stale' });
  assert.equal(next.names, state.names);
  assert.equal(next.byName, state.byName);
  assert.equal(next.modelsByBackend, state.modelsByBackend);
  assert.equal(next.processes.m2, state.processes.m2);
  assert.equal(next.processes.m1?.cwd, 'stale');
});

test('a process that moves to another backend leaves its old list', () => {
  const state = fromSnapshot([backend('a'), backend('b')], [proc('m1', 'a')]);
  assert.deepEqual(state.modelsByBackend, { a: ['m1'], b: [] });
  const moved = withProcess(state, proc('m1', 'b'));
  assert.deepEqual(moved.modelsByBackend, { a: [], b: ['m1'] });
  const removed = withoutProcess(moved, 'm1');
  assert.deepEqual(removed.modelsByBackend, { a: [], b: [] });
  assert.equal(removed.processes.m1, undefined);
  assert.equal(withoutProcess(removed, 'm1'), removed, 'removing an unknown model is a no-op');
});

test('a backend event is authoritative for its processes and keeps the model list when unchanged', () => {
  const state = fromSnapshot([backend('a', [proc('m1', 'a'), proc('m2', 'a')])], []);
  const same = withBackend(state, backend('a', [proc('m2', 'a'), proc('m1', 'a', 200)]));
  assert.equal(same.modelsByBackend.a, state.modelsByBackend.a);
  assert.equal(same.names, state.names);
  assert.equal(same.processes.m1?.pid, 200);
  const fewer = withBackend(state, backend('a', [proc('m2', 'a')]));
  assert.deepEqual(fewer.modelsByBackend.a, ['m2']);
  assert.equal(fewer.processes.m1, undefined);
  assert.equal('processes' in fewer.byName.a!, false);
});

test('backends stay sorted as they come and go, with their processes', () => {
  let state = fromSnapshot([backend('b')], []);
  state = withBackend(state, backend('a', [proc('m1', 'a')]));
  state = withBackend(state, backend('c'));
  assert.deepEqual(state.names, ['a', 'b', 'c']);
  state = withoutBackend(state, 'a');
  assert.deepEqual(state.names, ['b', 'c']);
  assert.equal(state.processes.m1, undefined);
  assert.equal(state.modelsByBackend.a, undefined);
  assert.equal(withoutBackend(state, 'zzz'), state);
});
