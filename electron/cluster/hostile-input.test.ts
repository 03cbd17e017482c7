// Hostile NATS traffic against real agents on an open loopback server: a few thousand calls, cards and events that
// are malformed, misshapen, forged, oversized, unsigned or replayed. Every one must be refused or dropped and
// counted; no agent may crash or lose its link, and nothing a node keeps may change. The viewer is watched all along
// (a client stays connected, as the app does), so cards and events reach it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { connect, type Msg, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { after, before, describe, test } from 'node:test';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { connect as connectAgent } from '../agent/connect.ts';
import { hangar, json, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import type { WireClient } from '../../shared/wire-client.ts';
import { loadIdentity, type ClusterIdentity } from './node-key.ts';
import { MAX_REQUEST_BYTES } from './member.ts';
import { sign, type SignedKind } from './signed.ts';
import { callSubject, eventsSubject, presenceSubject } from './subjects.ts';
import { nextBeat, nextCard, nodeState } from './test-cluster.ts';
import { startNats, type NatsServer } from './test-nats.ts';
import { addTrust } from './trust.ts';

const EACH = 200;

interface Hostile {
  subject: string;
  data: Uint8Array;
  headers?: MsgHdrs;
  reply?: string;
}

describe('the cluster against hostile NATS traffic', () => {
  let root: string;
  let nats: NatsServer;
  let nc: NatsConnection;
  let outsider: ClusterIdentity;
  let viewer: Agent;
  let watching: WireClient;
  let beta: Agent;
  let betaId: string;
  const stderr: string[] = [];

  const status = (agent: Agent) => read(agent, 'clusterStatus');
  const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
  const refusedOrDropped = async () => {
    const [v, b] = await Promise.all([status(viewer), status(beta)]);
    return total(b.refused) + total(v.dropped.cards) + total(v.dropped.events);
  };

  before(async () => {
    root = await tempDir('cluster-hostile');
    nats = await startNats();
    const gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    await addTrust(join(root, 'beta'), (await loadIdentity(join(root, 'viewer'))).publicKey, 'viewer');
    viewer = await startAgent(join(root, 'viewer'), gallery, ['--cluster', nats.url, '--name', 'viewer', '--ports', '23720-23729', '--heartbeat', '300']);
    beta = await startAgent(join(root, 'beta'), gallery, ['--cluster', nats.url, '--name', 'beta', '--ports', '23730-23739', '--heartbeat', '300']);
    for (const agent of [viewer, beta]) agent.child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
    watching = await connectAgent({ node: viewer.url, home: viewer.home });
    betaId = (await until('beta online', async () => (await read(viewer, 'nodes')).find((c) => c.name === 'beta' && c.status === 'online'), 3000)).id;
    nc = await connect({ servers: nats.url.replace('nats://', '') });
    outsider = await loadIdentity(join(root, 'outsider'));
  });

  after(async () => {
    watching?.close();
    await nc?.close();
    for (const agent of [viewer, beta]) agent?.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  /** One genuine message on `subject`, caught while `trigger` makes it. */
  async function capture(subject: string, trigger: () => Promise<unknown>): Promise<Msg> {
    const caught = new Promise<Msg>((resolve) => nc.subscribe(subject, { max: 1, callback: (_e, m) => resolve(m) }));
    await nc.flush();
    await trigger();
    return caught;
  }

  test(`${EACH} of each kind of hostile call, card and event: all refused or dropped, no crash, nothing changed`, async () => {
    const calls = callSubject(betaId);
    const cards = presenceSubject(betaId);
    const events = eventsSubject(betaId);
    const genuineCall = await capture(calls, () => hangar(viewer, 'ls', '--on', 'beta'));
    const genuineEvent = await capture(events, () => hangar(viewer, 'install', 'echo', '--on', 'beta'));
    const genuineCard = await nextCard(nc, betaId);
    const genuineBeat = await nextBeat(nc, betaId);
    await until('the install settled', async () => ((await json<Array<{ name: string }>>(viewer, 'ls', '--on', 'beta')).length === 1 ? true : undefined), 5000);
    const diskBefore = await nodeState(beta.home);
    const countedBefore = await refusedOrDropped();

    const text = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));
    const garbage = () => randomBytes(1 + Math.floor(Math.random() * 200));
    let at = Date.now() * 1000 + 1e9;
    const signed = (key: ClusterIdentity, kind: SignedKind, subject: string, node: string, data: Buffer, reply = ''): Hostile => ({
      subject,
      data,
      reply: reply || undefined,
      headers: sign(key, kind, subject, node, reply, kind === 'call' ? { at: String(Date.now()), nonce: randomBytes(18).toString('base64url') } : { at: String(at++) }, data),
    });
    const wrongShapes = [null, [], 42, 'x', { method: 'delete' }, { method: 'delete', params: { node: betaId, name: '../../etc' } }, { type: 'job', node: betaId, job: null }, { id: betaId }];
    const shape = (i: number) => text(wrongShapes[i % wrongShapes.length]);
    const makers: Array<[string, (i: number) => Hostile]> = [
      ['calls: bad JSON', () => ({ subject: calls, data: garbage(), reply: '_INBOX.hostile' })],
      ['calls: wrong shapes, unsigned', (i) => ({ subject: calls, data: shape(i), reply: '_INBOX.hostile' })],
      ['calls: signed by an untrusted key', (i) => signed(outsider, 'call', calls, betaId, text({ method: 'delete', params: { node: betaId, name: `echo${i % 2 ? '' : 'x'}` } }), '_INBOX.hostile')],
      ['calls: forged headers', () => ({ ...genuineCall, data: genuineCall.data, reply: '_INBOX.hostile', subject: calls, headers: genuineCall.headers! })],
      ['calls: replayed', () => ({ subject: calls, data: genuineCall.data, reply: genuineCall.reply!, headers: genuineCall.headers! })],
      ['calls: oversized', () => ({ subject: calls, data: Buffer.alloc(MAX_REQUEST_BYTES + 1 + Math.floor(Math.random() * 500_000), 0x7b), reply: '_INBOX.hostile' })],
      ['calls: no reply subject', (i) => ({ subject: calls, data: shape(i) })],
      ['cards: bad JSON, unsigned', () => ({ subject: cards, data: garbage() })],
      ['cards: signed by a key not the node\'s', (i) => signed(outsider, 'card', cards, betaId, shape(i))],
      ['cards: forged id on its own subject', () => signed(outsider, 'card', presenceSubject(outsider.id), outsider.id, genuineCard.data as Buffer)],
      ['cards: replayed', () => ({ subject: cards, data: genuineCard.data, headers: genuineCard.headers! })],
      ['cards: oversized', () => ({ subject: cards, data: Buffer.alloc(70_000 + Math.floor(Math.random() * 900_000), 0x20) })],
      ['beats: signed by a key not the node\'s', (i) => signed(outsider, 'beat', cards, betaId, text(String(i)))],
      ['beats: replayed', () => ({ subject: cards, data: genuineBeat.data, headers: genuineBeat.headers! })],
      ['beats: from a node with no card taken', (i) => signed(outsider, 'beat', presenceSubject(outsider.id), outsider.id, text(String(i)))],
      ['events: bad JSON, unsigned', () => ({ subject: events, data: garbage() })],
      ['events: wrong shapes, signed by another key', (i) => signed(outsider, 'event', events, betaId, shape(i))],
      ['events: wrong shapes on its own subject', (i) => signed(outsider, 'event', eventsSubject(outsider.id), outsider.id, shape(i))],
      ['events: replayed', () => ({ subject: events, data: genuineEvent.data, headers: genuineEvent.headers! })],
      ['events: oversized, unsigned', () => ({ subject: events, data: Buffer.alloc(100_000 + Math.floor(Math.random() * 900_000), 0x5b) })],
    ];
    let tried = 0;
    for (let i = 0; i < EACH; i++) {
      for (const [, make] of makers) {
        const m = make(i);
        nc.publish(m.subject, m.data, { ...(m.reply && { reply: m.reply }), ...(m.headers && { headers: m.headers }) });
        tried++;
      }
      if (i % 10 === 0) await nc.flush();
    }
    await nc.flush();

    const refused = await until('every hostile message counted', async () => {
      const counted = (await refusedOrDropped()) - countedBefore;
      return counted >= tried ? counted : undefined;
    }, 30_000).catch(async () => (await refusedOrDropped()) - countedBefore);
    const crashes = [viewer, beta].filter((a) => a.child.exitCode !== null).length + stderr.filter((s) => /reader closed|Uncaught|FATAL/.test(s)).length;
    const changed = JSON.stringify(await nodeState(beta.home)) === JSON.stringify(diskBefore) ? 0 : 1;
    console.log(`cluster hostile input: ${tried} tried, ${refused} refused or dropped, ${crashes} crashes, ${changed} data changed (${makers.length} kinds × ${EACH})`);
    assert.equal(refused, tried, 'every hostile message was refused or dropped, and counted');
    assert.equal(crashes, 0);
    assert.equal(changed, 0);
    const after = await read(viewer, 'nodes');
    assert.deepEqual(after.map((c) => [c.name, c.status]), [['beta', 'online'], ['viewer', 'online']], 'no forged card took a place');
    assert.deepEqual((await json<Array<{ name: string }>>(viewer, 'ls', '--on', 'beta')).map((b) => b.name), ['echo'], 'the link and the node still serve');
  });
});
