import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JobView, RolloutView } from '../../../shared/types.ts';
import { notices, rolloutNotice } from './notifications.ts';

const job = (id: string, patch: Partial<JobView>): JobView => ({
  id, node: 'local', kind: 'upgrade', backend: 'echo', state: 'done', phase: 'done', bytes: 0, totalBytes: null, error: null, notice: null,
  startedAt: '2026-01-01T10:00:00Z', finishedAt: '2026-01-01T10:00:05Z', ...patch,
});

const halted: RolloutView = {
  id: 'r1', backend: 'echo', version: '1.1.0', on: 'all', maxParallel: 1, state: 'halted', startedAt: '2026-01-01T10:00:00Z', finishedAt: '2026-01-01T10:01:00Z',
  coordinator: { id: 'local', name: 'this host' }, interrupted: null,
  nodes: [
    { id: 'a', name: 'n1', step: 'upgraded', reason: null, from: '1.0.0', to: '1.1.0' },
    { id: 'b', name: 'n2', step: 'failed', reason: 'upgrade echo: sha256 mismatch', from: '1.0.0', to: '1.1.0' },
    { id: 'c', name: 'n3', step: 'skipped', reason: 'halted: n2 failed', from: null, to: null },
  ],
};

test('a halted rollout is an error that names the node that failed and why, and what it did elsewhere', () => {
  assert.deepEqual(rolloutNotice(halted), {
    key: 'rollout:r1:halted',
    kind: 'error',
    text: 'Rollout of echo halted: n2 failed: upgrade echo: sha256 mismatch; upgraded n1; not upgraded: n3',
    at: Date.parse('2026-01-01T10:01:00Z'),
  });
  assert.equal(rolloutNotice({ ...halted, state: 'running', finishedAt: null }), null, 'nothing while it runs');
});

test("every node's finished jobs, named by node when there are several, newest first, after the last Clear", () => {
  const labels = new Map([['local', 'n1'], ['b', 'n2']]);
  const jobsByNode = {
    local: { j1: job('j1', {}) },
    b: { j2: job('j2', { state: 'failed', phase: 'failed', error: 'upgrade echo: sha256 mismatch', finishedAt: '2026-01-01T10:00:30Z' }) },
  };
  const list = notices(jobsByNode, labels, [halted], [], 0);
  assert.deepEqual(list.map((n) => [n.kind, n.text]), [
    ['error', 'Rollout of echo halted: n2 failed: upgrade echo: sha256 mismatch; upgraded n1; not upgraded: n3'],
    ['error', 'n2: upgrade echo failed: upgrade echo: sha256 mismatch'],
    ['info', 'n1: upgrade echo finished'],
  ]);
  assert.deepEqual(notices(jobsByNode, labels, [halted], [], Date.parse('2026-01-01T10:00:30Z')).length, 1, 'Clear hides what came before it');
  assert.equal(notices({ local: { j1: job('j1', { phase: 'up to date' }) } }, new Map([['local', 'n1']]), [], [], 0)[0]!.text, 'upgrade echo finished: up to date');
});
