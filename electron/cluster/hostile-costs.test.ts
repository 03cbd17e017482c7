// What hostile input can cost, on an open loopback nats-server where anyone may publish anything (the generated
// configuration's second line is not there): cards from hundreds of made-up nodes, a card that takes a node's name,
// compressed bombs, a flood of calls from keys no node trusts, replies of the wrong shape, a forged "no responders",
// and the rollouts bucket filled with large records. Each is dropped, bounded or seen for what it is, and the real
// nodes and calls go on.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { connect as connectAgent } from '../agent/connect.ts';
import { hangar, json, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import type { WireClient } from '../../shared/wire-client.ts';
import { loadIdentity, type ClusterIdentity } from './node-key.ts';
import { sign } from './signed.ts';
import { clusterOf } from './cluster-id.ts';
import { BUCKETS, callSubject, eventsSubject, presenceSubject } from './subjects.ts';
import { madeUpKey, nextCard, writeSigned } from './test-cluster.ts';
import { startNats, type NatsServer } from './test-nats.ts';
import { addTrust } from './trust.ts';

const HEARTBEAT_MS = 300;
const gzipAsync = promisify(gzip);

describe('what hostile input costs the cluster', () => {
  let root: string;
  let gallery: string;
  let nats: NatsServer;
  let nc: NatsConnection;
  let viewer: Agent;
  let beta: Agent;
  /** A client on the viewer all along, as the app is: the cluster is watched through it. */
  let watching: WireClient;
  let betaCard: Record<string, unknown>;
  let sequence = Date.now() * 1000;

  const status = (agent: Agent) => read(agent, 'clusterStatus');
  const cards = () => read(viewer, 'nodes');
  const args = (name: string, ports: string) => ['--cluster', nats.url, '--name', name, '--ports', ports, '--heartbeat', String(HEARTBEAT_MS)];
  /** A card of a node that is not there: signed by its own key, valid by the schema. */
  const announce = (key: ClusterIdentity, name: string, extra: Record<string, unknown> = {}) => {
    const subject = presenceSubject(key.id);
    const data = Buffer.from(JSON.stringify({ ...betaCard, id: key.id, name, trusts: [], ...extra }));
    nc.publish(subject, data, { headers: sign(key, 'card', subject, key.id, '', { at: String(sequence++) }, data) });
  };

  /** Announces a made-up node every heartbeat, as a live one would, until the returned stop is called. */
  const keepAnnouncing = (key: ClusterIdentity, name: string, extra: Record<string, unknown> = {}) => {
    announce(key, name, extra);
    const timer = setInterval(() => announce(key, name, extra), HEARTBEAT_MS);
    return () => clearInterval(timer);
  };

  before(async () => {
    root = await tempDir('cluster-costs');
    nats = await startNats();
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    const [viewerKey, betaKey] = await Promise.all([loadIdentity(join(root, 'viewer')), loadIdentity(join(root, 'beta'))]);
    await addTrust(join(root, 'beta'), viewerKey.publicKey, 'viewer');
    await addTrust(join(root, 'viewer'), betaKey.publicKey, 'beta');
    viewer = await startAgent(join(root, 'viewer'), gallery, args('viewer', '23740-23749'));
    beta = await startAgent(join(root, 'beta'), gallery, args('beta', '23750-23759'));
    watching = await connectAgent({ node: viewer.url, home: viewer.home });
    nc = await connect({ servers: nats.url.replace('nats://', '') });
    betaCard = JSON.parse((await nextCard(nc, betaKey.id)).string()) as Record<string, unknown>;
    await until('beta online', async () => ((await cards()).some((c) => c.name === 'beta' && c.status === 'online') ? true : undefined), 5000);
    assert.equal((await hangar(viewer, 'install', 'echo', '--on', 'beta')).code, 0);
  });

  after(async () => {
    watching?.close();
    await nc?.close();
    for (const agent of [viewer, beta]) agent?.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('cards of 300 made-up nodes take no member\'s place: a real node that joins after them is listed, and they are forgotten once silent', async () => {
    for (let i = 0; i < 300; i++) announce(madeUpKey(), `made-up-${i}`);
    await nc.flush();
    const gamma = await startAgent(join(root, 'gamma'), gallery, args('gamma', '23760-23769'));
    try {
      await addTrust(gamma.home, (await loadIdentity(join(root, 'viewer'))).publicKey, 'viewer');
      const listed = await until('gamma listed', async () => {
        const all = await cards();
        return all.some((c) => c.name === 'gamma' && c.status === 'online' && c.access === 'trusted') ? all : undefined;
      }, 5000);
      assert.ok(listed.filter((c) => c.name.startsWith('made-up-')).length <= 64, 'strangers are kept within their own limit');
      await until('the made-up nodes forgotten', async () => ((await cards()).some((c) => c.name.startsWith('made-up-')) ? undefined : true), 3 * HEARTBEAT_MS + 3000);
    } finally {
      // Shut down as a user stops it: its last card says so, and no rollout below waits on it.
      gamma.child.kill('SIGTERM');
      await new Promise((resolve) => gamma.child.once('exit', resolve));
    }
  });

  test("a card that takes beta's name with another id is shown, and `--on beta` still means the beta that trusts this host; a rolling upgrade is not halted by it", async () => {
    const impostor = madeUpKey();
    const stop = keepAnnouncing(impostor, 'beta');
    try {
      await until('the impostor listed', async () => ((await cards()).some((c) => c.id === impostor.id) ? true : undefined), 3000);
      const listed = await hangar(viewer, 'nodes');
      assert.match(listed.stdout, /name shared: --on beta means this one/);
      assert.match(listed.stdout, new RegExp(`name shared: --on beta means [0-9a-f]{16}`));
      assert.deepEqual((await json<Array<{ name: string }>>(viewer, 'ls', '--on', 'beta')).map((b) => b.name), ['echo']);
      const rolled = await hangar(viewer, 'upgrade', 'echo', '--on', 'all');
      assert.equal(rolled.code, 0, rolled.stderr);
      const rollout = (await read(viewer, 'rollouts'))[0]!;
      assert.equal(rollout.state, 'done');
      assert.equal(rollout.nodes.find((n) => n.id === impostor.id)?.reason, 'not trusted by this node');
    } finally {
      stop();
    }
  });

  test('compressed bombs from a made-up node are cut off as they inflate, and past a few a second not inflated at all; a stranger\'s are not even read', async () => {
    const bomber = madeUpKey();
    const bomb = await gzipAsync(Buffer.alloc(64 * 1024 * 1024, 0x20));
    // The worst case: its card says it trusts the viewer, which makes it a member whose events the viewer takes.
    const stop = keepAnnouncing(bomber, 'bomber', { trusts: [(await loadIdentity(join(root, 'viewer'))).id] });
    const stranger = madeUpKey();
    const stopStranger = keepAnnouncing(stranger, 'stranger');
    try {
      await until('the bomber listed', async () => ((await cards()).some((c) => c.id === bomber.id) ? true : undefined), 3000);
      await until('the stranger listed', async () => ((await cards()).some((c) => c.id === stranger.id) ? true : undefined), 3000);
      const bombs = (key: ClusterIdentity, count: number) => {
        const subject = eventsSubject(key.id);
        for (let i = 0; i < count; i++) nc.publish(subject, bomb, { headers: sign(key, 'event', subject, key.id, '', { at: String(sequence++), encoding: 'gzip' }, bomb) });
      };
      const sent = Date.now();
      bombs(bomber, 200);
      bombs(stranger, 50);
      await nc.flush();
      const dropped = await until('all 250 dropped', async () => {
        const events = (await status(viewer)).dropped.events;
        return (events['not JSON'] ?? 0) + (events['compressed, over its rate'] ?? 0) + (events['from a node this host does not call'] ?? 0) >= 250 ? events : undefined;
      }, 20_000);
      // Read on a loaded machine, the bombs arrive over more than a second, and the rate lets 10 more in each one.
      const allowed = 50 + 10 * Math.ceil((Date.now() - sent) / 1000);
      assert.ok((dropped['not JSON'] ?? 0) <= allowed, `${dropped['not JSON']} inflated: a burst of 50, then 10 a second (${allowed} in the ${Date.now() - sent} ms they took)`);
      assert.ok((dropped['from a node this host does not call'] ?? 0) >= 50, "the stranger's were not read");
    } finally {
      stop();
      stopStranger();
    }
    assert.deepEqual((await json<Array<{ name: string }>>(viewer, 'ls', '--on', 'beta')).map((b) => b.name), ['echo']);
  });

  test('a flood of calls from a key no node trusts is mostly left unanswered, and a trusted call gets through meanwhile', async () => {
    const outsider = madeUpKey();
    const betaId = (await cards()).find((c) => c.name === 'beta' && c.access === 'trusted')!.id;
    const subject = callSubject(betaId);
    let answered = 0;
    const inbox = `_INBOX.flood-${randomBytes(4).toString('hex')}`;
    nc.subscribe(`${inbox}.>`, { callback: () => void answered++ });
    const started = Date.now();
    for (let i = 0; i < 2000; i++) {
      const body = Buffer.from(JSON.stringify({ method: 'delete', params: { node: betaId, name: 'echo' } }));
      const reply = `${inbox}.${i}`;
      nc.publish(subject, body, { reply, headers: sign(outsider, 'call', subject, betaId, reply, { at: String(Date.now()), nonce: randomBytes(18).toString('base64url') }, body) });
    }
    await nc.flush();
    const during = await hangar(viewer, 'ls', '--on', 'beta');
    assert.equal(during.code, 0, during.stderr);
    await until('beta counted them all', async () => {
      const refused = (await status(beta)).refused;
      return (refused['untrusted callers over their rate'] ?? 0) + (refused['not trusted'] ?? 0) >= 2000 ? true : undefined;
    }, 10_000);
    const seconds = (Date.now() - started) / 1000;
    assert.ok(answered <= 40 + Math.ceil(20 * seconds), `${answered} answered in ${seconds.toFixed(1)} s: at most a burst of 40, then 20 a second`);
    assert.deepEqual((await json<Array<{ name: string }>>(viewer, 'ls', '--on', 'beta')).map((b) => b.name), ['echo'], 'beta deleted nothing');
  });

  test('a reply of the wrong shape is an error, not a crash; a forged "no responders" does not end a call a node answers', async () => {
    const fake = madeUpKey();
    const stop = keepAnnouncing(fake, 'fake', { open: true });
    await until('the fake node listed', async () => ((await cards()).some((c) => c.id === fake.id) ? true : undefined), 3000);
    nc.subscribe(callSubject(fake.id), {
      callback: (_e, msg) => {
        const body = Buffer.from(JSON.stringify({ ok: true, value: { processes: 'not a list' } }));
        nc.publish(msg.reply!, body, { headers: sign(fake, 'reply', msg.reply!, fake.id, '', {}, body) });
      },
    });
    const wrong = await hangar(viewer, 'ps', '--on', fake.id);
    stop();
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /^hangar: node fake \([0-9a-f]{16}\) sent a reply that is not what processes returns \(the value: /);

    const betaId = (await cards()).find((c) => c.name === 'beta' && c.access === 'trusted')!.id;
    const forger = nc.subscribe(callSubject(betaId), {
      callback: (_e, msg) => nc.publish(msg.reply!, new Uint8Array(), { headers: headers(503, 'No Responders') }),
    });
    try {
      const answered = await hangar(viewer, 'ls', '--on', 'beta');
      assert.equal(answered.code, 0, answered.stderr);
    } finally {
      forger.unsubscribe();
    }
  });

  test('a rollouts bucket filled with large records signed by a key no one trusts: listed as untrusted, and the rollouts still list', async () => {
    const outsider = madeUpKey();
    const kv = await new Kvm(jetstream(nc)).open(BUCKETS.rollouts, { allow_direct: true });
    /** A valid rollout record of about `kib` KiB: long reasons on many nodes. */
    const large = (id: string, kib: number) => {
      const nodes = Array.from({ length: Math.ceil(kib / 15) }, () => ({ id: outsider.id, name: 'n', step: 'failed', reason: 'x'.repeat(15 * 1024), from: null, to: null }));
      const at = new Date().toISOString();
      return { rollout: { id, backend: 'echo', version: '9.9.9', on: 'all', maxParallel: 1, state: 'halted', startedAt: at, finishedAt: at, coordinator: { id: outsider.id, name: 'x' }, interrupted: null, nodes }, heartbeatMs: 2000, previous: null, beat: 0 };
    };
    let refusedBySize = 0;
    const cluster = clusterOf(nc.info);
    for (let i = 0; i < 60; i++) await writeSigned(kv, cluster, outsider, 'rollout', `flood-${i}`, large(`flood-${i}`, 400)).catch(() => refusedBySize++);
    await writeSigned(kv, cluster, outsider, 'rollout', 'too-large', large('too-large', 600)).catch(() => refusedBySize++);
    assert.equal(refusedBySize, 1, 'the bucket refuses a value over its limit');
    await until('every one listed as untrusted', async () => ((await status(viewer)).untrusted.filter((r) => r.bucket === 'rollouts').length >= 60 ? true : undefined), 10_000);
    const listed = await hangar(viewer, 'rollouts');
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok((await read(viewer, 'rollouts')).every((r) => !r.id.startsWith('flood-')));
  });
});
