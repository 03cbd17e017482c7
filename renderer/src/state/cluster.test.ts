import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NodeCard } from '../../../shared/types.ts';
import { memberCard } from './cluster.ts';

const card = (id: string): NodeCard => ({
  id, name: 'beta', self: false, status: 'online', reason: null, host: 'h', platform: 'linux', arch: 'x64', capability: 'default', version: '0.1.0',
  counts: { backends: 1, processes: 0, stale: 0, upgradable: 0, drift: 0 }, heartbeatMs: 2000, lastSeen: '2026-01-01T00:00:00Z', access: 'trusted',
  labels: {}, cordoned: false, resources: null,
});

test("a member event is taken only with a card of the node it names; another node's card is ignored", () => {
  assert.deepEqual(memberCard({ type: 'member', node: 'aaaa', member: card('aaaa') }), card('aaaa'));
  assert.equal(memberCard({ type: 'member', node: 'aaaa', member: card('bbbb') }), null);
});
