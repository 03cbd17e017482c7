import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DesiredStateView, DesiredVersion, NodeCard, NodeConvergence, RolloutView } from '../../shared/types.ts';
import { desiredTable, pinSentence, rolloutTable } from './format-cluster.ts';
import { pickId } from './id-prefix.ts';

const card = (name: string, patch: Partial<NodeCard> = {}) => ({ id: `${name}-0123456789ab`, name, status: 'online', reason: null, labels: {}, self: false, ...patch }) as NodeCard;
const pin = (patch: Partial<DesiredVersion> = {}): DesiredVersion => ({ backend: 'echo', version: '2.0.0', on: 'all', installMissing: true, rollout: null, by: 'k1', at: '2026-01-01T00:00:00.000Z', ...patch });
const said = (node: NodeCard, patch: Partial<NodeConvergence>): NodeConvergence => ({ node: node.id, backend: 'echo', wanted: '2.0.0', version: '2.0.0', state: 'converged', reason: null, tries: 0, at: '', ...patch });

test('desired lists an offline node as not there yet, with why, unless it was seen there', () => {
  const [n1, n2, n3] = [card('n1', { self: true }), card('n2', { status: 'offline', reason: 'no heartbeat since 2026-01-01T00:00:03.000Z' }), card('n3', { status: 'offline', reason: 'no heartbeat since 2026-01-01T00:00:09.000Z' })];
  const view: DesiredStateView = { available: true, reason: null, desired: [pin()], nodes: [said(n1, {}), said(n2, { wanted: '1.0.0', version: '1.0.0' }), said(n3, {})] };
  const rows = desiredTable(view, [n1, n2, n3]).split('\n').filter((line) => line.startsWith('n'));
  assert.equal(rows.length, 1, 'n1 and n3 run it');
  assert.match(rows[0]!, /^n2 +n2-0123456789ab +echo +2\.0\.0 +1\.0\.0 +not there yet +offline: no heartbeat since 2026-01-01T00:00:03.000Z: it converges when it is back$/);

  const silent: DesiredStateView = { ...view, nodes: [said(n1, {})] };
  assert.match(desiredTable(silent, [n1, n2]), /^n2 +\S+ +echo +2\.0\.0 +\? +not there yet +offline: no heartbeat since 2026-01-01T00:00:03.000Z/m, 'a node that never said anything of it');
  const stuck: DesiredStateView = { ...view, nodes: [said(n2, { state: 'failed', version: '1.0.0', reason: 'sha256 mismatch' })] };
  assert.match(desiredTable(stuck, [n1, n2]), /^n2 +\S+ +echo +2\.0\.0 +1\.0\.0 +failed +sha256 mismatch; offline: no heartbeat since 2026-01-01T00:00:03.000Z$/m, 'what it said, and that it is away');
  assert.doesNotMatch(desiredTable({ ...view, desired: [pin({ on: 'nodes:n1-0123456789ab' })] }, [n1, n2]), /^n2 /m, 'a node the pin does not select');
});

test('a pin and a rollout on chosen nodes name them, not their ids', () => {
  const cards = [card('n1'), card('n2'), card('n3')];
  assert.equal(pinSentence(pin({ on: 'nodes:n2-0123456789ab' }), cards), 'echo 2.0.0 is the desired version on node n2');
  assert.equal(pinSentence(pin({ on: 'nodes:n1-0123456789ab,n3-0123456789ab' }), cards), 'echo 2.0.0 is the desired version on nodes n1, n3');
  assert.equal(pinSentence(pin({ on: 'nodes:gone-id' }), cards), 'echo 2.0.0 is the desired version on node gone-id', 'a node no longer known keeps its id');
  assert.match(desiredTable({ available: true, reason: null, desired: [pin({ on: 'nodes:n2-0123456789ab' })], nodes: [] }, cards), /^echo +2\.0\.0 +node n2 +pin /m);
  const rollout = {
    id: 'r1', backend: 'echo', version: '2.0.0', on: 'nodes:n2-0123456789ab', maxParallel: 1, state: 'done', startedAt: '', finishedAt: '', coordinator: { id: 'v', name: 'v1' }, interrupted: null, nodes: [],
  } as RolloutView;
  assert.match(rolloutTable(rollout, cards), /^rollout r1: echo → 2\.0\.0 on node n2, done/);
});

test('an id is taken by its first characters; characters that start several say which', () => {
  const ids = ['3f2a91c0-aaaa', '3f2b0000-bbbb', '9c000000-cccc'];
  const what = { plural: 'rollouts', list: 'hangar rollouts' };
  assert.equal(pickId(ids, '9c', what), '9c000000-cccc');
  assert.equal(pickId(ids, '3f2b0000-bbbb', what), '3f2b0000-bbbb');
  assert.equal(pickId(ids, 'zz', what), 'zz', 'left for the host to refuse');
  assert.throws(() => pickId(ids, '3f2', what), { message: '2 rollouts start with "3f2" (3f2a91c0-aaaa, 3f2b0000-bbbb): give more of the id (see hangar rollouts)' });
});
