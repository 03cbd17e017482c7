import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NodeMethod, NodeRef } from '../../shared/api.ts';
import { HangarError } from '../../shared/errors.ts';
import type { NodeCard } from '../../shared/types.ts';
import type { NodeProvider } from './provider.ts';
import { cardsOf, routeTo } from './router.ts';

function card(id: string, more: Partial<NodeCard> = {}): NodeCard {
  return {
    id, name: id, self: false, status: 'online', reason: null, host: 'h', platform: 'linux', arch: 'x64', capability: 'default', version: '1',
    counts: { backends: 0, upgradable: 0, stale: 0, processes: 0, drift: 0 }, heartbeatMs: 0, lastSeen: '2026-01-01T00:00:00.000Z', access: 'self',
    labels: {}, cordoned: false, resources: null, ...more,
  } as NodeCard;
}

/** A kind of node that owns `ids` and answers each call with who answered it. */
function provider(kind: string, ids: string[], describe?: NodeProvider['describe']): NodeProvider & { calls: string[] } {
  const calls: string[] = [];
  return {
    kind,
    calls,
    owns: (id) => ids.includes(id),
    cards: async () => ids.map((id) => card(id)),
    ...(describe && { describe }),
    call: async (method: NodeMethod, req: NodeRef) => {
      calls.push(`${method} ${req.node}`);
      if (!ids.includes(req.node)) throw new HangarError('not-found', `no node ${req.node} here (${kind})`);
      return kind;
    },
    onEvent: () => undefined,
    close: async () => undefined,
  };
}

test('a call goes to the kind that owns its node, and an unknown node to the fallback, which says why', async () => {
  const local = provider('local', ['local']);
  const members = provider('members', ['n1', 'n2']);
  const workers = provider('workers', ['localai-w1']);
  const api = routeTo([local, members, workers], members);
  assert.equal(await api.backends({ node: 'local' }), 'local');
  assert.equal(await api.backends({ node: 'n2' }), 'members');
  assert.equal(await api.processes({ node: 'localai-w1' }), 'workers');
  await assert.rejects(api.info({ node: 'n9' }), /no node n9 here \(members\)/);
  assert.deepEqual([local.calls, members.calls, workers.calls], [['backends local'], ['backends n2', 'info n9'], ['processes localai-w1']]);
});

test('cards come in the host\'s order, each kind describing the others\' cards but not its own', async () => {
  const pairedWith = (cards: NodeCard[]) => cards.map((c) => (c.id === 'n1' ? { ...c, pairedWorker: 'localai-w1' } : c));
  const cards = await cardsOf([provider('local', ['local']), provider('members', ['n1', 'n2']), provider('workers', ['localai-w1'], pairedWith)]);
  assert.deepEqual(cards.map((c) => c.id), ['local', 'n1', 'n2', 'localai-w1']);
  assert.deepEqual(cards.filter((c) => c.pairedWorker).map((c) => c.id), ['n1']);
});
