import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BackendView, ProcessView } from '../../../shared/types.ts';
import { patchBackends, tallyOfViews } from './node-backends.ts';

const backend = (name: string, patch: Partial<BackendView> = {}): BackendView => ({
  name, kind: 'backend', runs: name, localai: [], leftover: null, kept: null, alias: null, version: '1.0.0', digest: null, sha256: null, uri: null, gallery: null, dir: `/b/${name}`, installedAt: null,
  metaBackendFor: null, upgradable: false, availableVersion: null, previous: null, broken: null, processes: [], ...patch,
});
const proc = (model: string, backendName: string, patch: Partial<ProcessView> = {}) => ({ model, backend: backendName, cwd: 'ok', state: 'ready', ...patch }) as ProcessView;

test("a node's events keep its list and its counts in step: an upgrade, a stale process, a rollback", () => {
  let list = [backend('echo', { processes: [proc('m1', 'echo')] }), backend('whisper')];
  list = patchBackends(list, { type: 'process', node: 'n2', process: proc('m1', 'echo', { cwd: 'stale', state: 'stale' }) });
  assert.deepEqual(tallyOfViews(list), { stale: 1, upgradable: 0 });
  list = patchBackends(list, { type: 'backend', node: 'n2', backend: backend('echo', { upgradable: true, processes: [proc('m1', 'echo')] }) });
  assert.deepEqual(tallyOfViews(list), { stale: 0, upgradable: 1 });
  assert.deepEqual(list.map((b) => b.name), ['echo', 'whisper']);
  list = patchBackends(list, { type: 'process-removed', node: 'n2', model: 'm1' });
  list = patchBackends(list, { type: 'backend-removed', node: 'n2', name: 'whisper' });
  assert.deepEqual(list.map((b) => [b.name, b.processes.length]), [['echo', 0]]);
  assert.equal(patchBackends(list, { type: 'log', node: 'n2', line: { model: 'm1', stream: 'stdout', text: '', at: '' } }), list);
});
