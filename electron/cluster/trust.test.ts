// What reaching the NATS server gives an outsider: nothing. On an open loopback server (no users, no permissions)
// a plain NATS client and a client with a key of its own try what used to work: acting on a node, replaying and
// redirecting captured calls, answering for a node, forging and replaying its cards and events. Every such message
// is refused or dropped, counted, and changes nothing on disk.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { connect, type Msg, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { after, before, describe, test } from 'node:test';
import type { BackendView } from '../../shared/types.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { connect as connectAgent } from '../agent/connect.ts';
import { hangar, json, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import type { WireClient } from '../../shared/wire-client.ts';
import { loadIdentity, type ClusterIdentity } from './node-key.ts';
import { sign, type SignedKind } from './signed.ts';
import { callSubject, eventsSubject, presenceSubject } from './subjects.ts';
import { nextCard, nodeState } from './test-cluster.ts';
import { startNats, type NatsServer } from './test-nats.ts';
import { addTrust } from './trust.ts';

describe('an outsider on the NATS server', () => {
  let root: string;
  let nats: NatsServer;
  let nc: NatsConnection;
  let outsider: ClusterIdentity;
  const agents: Record<string, Agent> = {};
  /** A client on the viewer all along, as the app is: the cluster is watched through it. */
  let watching: WireClient;
  const ids: Record<string, string> = {};

  const status = (agent: Agent) => read(agent, 'clusterStatus');
  /** Sends one call and waits for its answer; `headers` are fixed, or made for the reply subject chosen here. */
  const ask = async (subject: string, body: string | Buffer, headers?: MsgHdrs | ((reply: string) => MsgHdrs)) => {
    const inbox = `_INBOX.outsider.${Math.random().toString(36).slice(2)}`;
    // An unanswered call fails the test instead of hanging it.
    const answer = new Promise<Msg>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer on ${subject} within 10 s`)), 10_000);
      nc.subscribe(inbox, { max: 1, callback: (_e, m) => (clearTimeout(timer), resolve(m)) });
    });
    const h = typeof headers === 'function' ? headers(inbox) : headers;
    nc.publish(subject, body, { reply: inbox, ...(h && { headers: h }) });
    return JSON.parse((await answer).string()) as { ok: boolean; error?: { code: string; message: string } };
  };
  const signedBy = (identity: ClusterIdentity, kind: SignedKind, subject: string, node: string, body: Buffer, stamp: Record<string, string>, reply = '') =>
    sign(identity, kind, subject, node, reply, stamp, body);

  before(async () => {
    root = await tempDir('cluster-trust');
    nats = await startNats();
    const gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    const viewer = await loadIdentity(join(root, 'viewer'));
    const ports: Record<string, string> = { viewer: '23660-23669', alpha: '23670-23679', beta: '23680-23689' };
    for (const name of ['viewer', 'alpha', 'beta']) {
      if (name !== 'viewer') await addTrust(join(root, name), viewer.publicKey, 'viewer');
      agents[name] = await startAgent(join(root, name), gallery, ['--cluster', nats.url, '--name', name, '--ports', ports[name]!, '--heartbeat', '300', '--call-timeout', '1500']);
    }
    watching = await connectAgent({ node: agents.viewer!.url, home: agents.viewer!.home });
    const cards = await until('alpha and beta online', async () => {
      const all = await read(agents.viewer!, 'nodes');
      return all.filter((c) => c.status === 'online').length === 3 ? all : undefined;
    }, 15_000);
    for (const card of cards) ids[card.name] = card.id;
    assert.equal((await hangar(agents.viewer!, 'install', 'echo', '--on', 'beta')).code, 0);
    nc = await connect({ servers: nats.url.replace('nats://', '') });
    outsider = await loadIdentity(join(root, 'outsider'));
  });

  after(async () => {
    watching?.close();
    await nc?.close();
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  test("an outsider's raw and self-signed calls are refused, and nothing changes on disk", async () => {
    const before = await nodeState(agents.beta!.home);
    const beta = ids.beta!;
    const subject = callSubject(beta);
    const calls = [
      { method: 'updateSettings', params: { node: beta, settings: { galleries: [{ name: 'evil', location: 'http://127.0.0.1:9/index.yaml', enabled: true }] } } },
      { method: 'install', params: { node: beta, name: 'evil@payload', force: true } },
      { method: 'delete', params: { node: beta, name: 'echo' } },
      { method: 'load', params: { node: beta, backend: 'echo', model: 'x' } },
    ];
    for (const call of calls) {
      const body = Buffer.from(JSON.stringify(call));
      const raw = await ask(subject, body);
      assert.deepEqual([raw.ok, raw.error?.code, raw.error?.message], [false, 'forbidden', 'node beta acts only on calls signed by a viewer it trusts']);
      const stamp = { at: String(Date.now()), nonce: Math.random().toString(36).repeat(3) };
      const untrusted = await ask(subject, body, (reply) => signedBy(outsider, 'call', subject, beta, body, stamp, reply));
      assert.equal(untrusted.error?.message, `not trusted by node beta: run \`hangar cluster trust ${outsider.publicKey}\` there`);
    }
    const misdirected = signedBy(outsider, 'call', subject, beta, Buffer.from('{}'), { at: String(Date.now()), nonce: 'x'.repeat(20) }, '_INBOX.elsewhere');
    assert.equal((await ask(subject, Buffer.from('{}'), misdirected)).error?.message, "the call's signature does not check (bad signature)");
    assert.deepEqual(await nodeState(agents.beta!.home), before, 'nothing changed on disk');
    const refused = (await status(agents.beta!)).refused;
    assert.deepEqual(refused, { unsigned: calls.length, 'not trusted': calls.length, 'bad signature': 1 });
  });

  test('a captured call cannot be replayed, redirected to another node, or have its answer sent elsewhere', async () => {
    const captured = new Promise<Msg>((resolve) => nc.subscribe(callSubject(ids.beta!), { max: 1, callback: (_e, m) => resolve(m) }));
    await nc.flush();
    assert.equal((await hangar(agents.viewer!, 'ls', '--on', 'beta')).code, 0);
    const call = await captured;
    const replayed = await ask(call.subject, Buffer.from(call.data), call.headers);
    assert.match(replayed.error?.message ?? '', /^the call's signature does not check \(bad signature\)$/, 'a new reply subject breaks the signature');
    nc.publish(call.subject, call.data, { reply: call.reply!, headers: call.headers! });
    // Its refusal is seen in the count, which a loaded machine may take a while to show.
    await until('the replay counted', async () => ((await status(agents.beta!)).refused.replayed ? true : undefined), 15_000);
    assert.equal((await status(agents.beta!)).refused.replayed, 1, 'the same call again, to its own reply subject, is a replay');
    const redirected = await ask(callSubject(ids.alpha!), Buffer.from(call.data), call.headers);
    assert.equal(redirected.error?.message, "the call's signature does not check (bad signature)");
  });

  test("a trusted viewer's call with its clock five minutes behind, or with no nonce, is refused", async () => {
    const viewerKey = await loadIdentity(agents.viewer!.home);
    const subject = callSubject(ids.beta!);
    const body = Buffer.from(JSON.stringify({ method: 'backends', params: { node: ids.beta } }));
    const late = await ask(subject, body, (reply) => signedBy(viewerKey, 'call', subject, ids.beta!, body, { at: String(Date.now() - 300_000), nonce: 'n'.repeat(24) }, reply));
    assert.equal(late.error?.message, "the caller's clock is 300 s behind this node's clock (at most 60 s allowed)");
    const noNonce = await ask(subject, body, (reply) => signedBy(viewerKey, 'call', subject, ids.beta!, body, { at: String(Date.now()) }, reply));
    assert.equal(noNonce.error?.message, 'the call carries no nonce');
  });

  test("a client answering for a node is not believed: only the node's own signed reply is taken", async () => {
    const forged = JSON.stringify({ ok: true, value: [{ name: 'forged' }] });
    const impostor = nc.subscribe(callSubject(ids.beta!), {
      callback: (_e, m) => {
        m.respond(forged);
        const body = Buffer.from(forged);
        m.respond(body, { headers: signedBy(outsider, 'reply', m.reply!, ids.beta!, body, { part: '0/1' }) });
      },
    });
    await nc.flush();
    const beta = agents.beta!.child;
    try {
      // With beta stopped only the impostor answers: the viewer waits for beta's own reply, and counts the others.
      beta.kill('SIGSTOP');
      const before = (await status(agents.viewer!)).dropped.replies;
      const unanswered = await hangar(agents.viewer!, 'ls', '--on', ids.beta!);
      assert.equal(unanswered.stderr, `hangar: node beta (${ids.beta}) did not answer within 1.5 s\n`);
      const after = (await status(agents.viewer!)).dropped.replies;
      assert.equal((after.unsigned ?? 0) - (before.unsigned ?? 0), 1);
      assert.equal((after["signed by another node's key"] ?? 0) - (before["signed by another node's key"] ?? 0), 1);
      beta.kill('SIGCONT');
      const listed = await json<BackendView[]>(agents.viewer!, 'ls', '--on', ids.beta!);
      assert.deepEqual(listed.map((b) => b.name), ['echo'], 'with beta back, its reply is the one taken');
    } finally {
      beta.kill('SIGCONT');
      impostor.unsubscribe();
    }
  });

  test('forged, misplaced and replayed cards are dropped and counted; a look-alike keeps its own id', async () => {
    const beta = ids.beta!;
    const genuine = await nextCard(nc, beta);
    const card = JSON.parse(genuine.string()) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...card, name: 'evil', counts: { backends: 99, processes: 0, stale: 0, upgradable: 0, drift: 0 } }));
    const at = () => String(Date.now() * 1000 + 999);
    const before = (await status(agents.viewer!)).dropped.cards;
    nc.publish(presenceSubject(beta), forged);
    nc.publish(presenceSubject(beta), forged, { headers: signedBy(outsider, 'card', presenceSubject(beta), beta, forged, { at: at() }) });
    const own = presenceSubject(outsider.id);
    nc.publish(own, forged, { headers: signedBy(outsider, 'card', own, outsider.id, forged, { at: at() }) });
    nc.publish(own, Buffer.from('{"id":'), { headers: signedBy(outsider, 'card', own, outsider.id, Buffer.from('{"id":'), { at: at() }) });
    nc.publish(genuine.subject, genuine.data, { headers: genuine.headers! });
    const lookAlike = Buffer.from(JSON.stringify({ ...card, id: outsider.id, open: true }));
    nc.publish(own, lookAlike, { headers: signedBy(outsider, 'card', own, outsider.id, lookAlike, { at: at() }) });
    await nc.flush();
    const dropped = await until('five cards dropped', async () => {
      const cards = (await status(agents.viewer!)).dropped.cards;
      const since: Record<string, number> = Object.fromEntries(Object.entries(cards).map(([reason, n]) => [reason, n - (before[reason] ?? 0)]).filter(([, n]) => n !== 0));
      return Object.values(since).reduce((a, b) => a + b, 0) >= 5 ? since : undefined;
    }, 15_000);
    assert.deepEqual(dropped, { unsigned: 1, "signed by another node's key": 1, 'names another node': 1, 'not JSON': 1, replayed: 1 });
    const cards = await read(agents.viewer!, 'nodes');
    const real = cards.find((c) => c.id === beta)!;
    assert.deepEqual([real.name, real.status, real.counts.backends, real.access], ['beta', 'online', 1, 'trusted']);
    const twin = cards.find((c) => c.id === outsider.id)!;
    assert.deepEqual([twin.name, twin.access], ['beta', 'open'], 'a look-alike is another node, under its own id');
    const ambiguous = await hangar(agents.viewer!, 'ls', '--on', 'beta');
    assert.match(ambiguous.stderr, /^hangar: 2 nodes are named "beta": pass one of their ids/);
  });

  test('a node started with --insecure-any-caller acts on anyone\'s call, and every viewer sees it is open', async () => {
    agents.open = await startAgent(join(root, 'open'), join(root, 'index.yaml'), ['--cluster', nats.url, '--name', 'open', '--ports', '23690-23699', '--heartbeat', '300', '--insecure-any-caller']);
    const card = await until('open online', async () => (await read(agents.viewer!, 'nodes')).find((c) => c.name === 'open' && c.status === 'online'), 15_000);
    assert.equal(card.access, 'open');
    const raw = await ask(callSubject(card.id), JSON.stringify({ method: 'backends', params: { node: card.id } }));
    assert.deepEqual(raw, { ok: true, value: [] });
    const table = (await hangar(agents.open, 'nodes')).stdout;
    assert.match(table, /\nopen \(this host\) +[0-9a-f]{16} +online +this host /);
    assert.match(table, /\nbeta +[0-9a-f]{16} +online +not trusted by this node /, 'beta trusts the viewer, not this host');
    const rollout = await hangar(agents.open, 'upgrade', 'echo', '--on', 'all', '--json');
    assert.equal(rollout.code, 0, rollout.stderr);
    const steps = (JSON.parse(rollout.stdout) as { nodes: Array<{ name: string; step: string; reason: string | null }> }).nodes;
    assert.deepEqual(steps.filter((n) => ['alpha', 'beta', 'viewer'].includes(n.name)).map((n) => [n.name, n.step, n.reason]), [
      ['alpha', 'skipped', 'not trusted by this node'],
      ['beta', 'skipped', 'not trusted by this node'],
      ['viewer', 'skipped', 'not trusted by this node'],
    ], 'a rolling upgrade passes by the nodes that do not trust this host, and says so');
  });

  test('forged events, and a job event with no job, are dropped and counted while a waiting CLI and the link live on', async () => {
    const beta = ids.beta!;
    const betaKey = await loadIdentity(agents.beta!.home);
    const subject = eventsSubject(beta);
    const poison = Buffer.from(JSON.stringify({ type: 'job', node: beta, job: null }));
    const elsewhere = Buffer.from(JSON.stringify({ type: 'backend-removed', node: ids.alpha, name: 'echo' }));
    const linkBefore = (await status(agents.viewer!)).link;
    assert.equal(linkBefore.connected, true);
    let at = Date.now() * 1000 + 10_000_000;
    let sent = 0;
    const flood = setInterval(() => {
      nc.publish(subject, poison);
      nc.publish(subject, poison, { headers: signedBy(outsider, 'event', subject, beta, poison, { at: String(at++) }) });
      nc.publish(subject, poison, { headers: signedBy(betaKey, 'event', subject, beta, poison, { at: String(at++) }) });
      nc.publish(subject, elsewhere, { headers: signedBy(betaKey, 'event', subject, beta, elsewhere, { at: String(at++) }) });
      sent++;
    }, 5);
    let install;
    try {
      install = await hangar(agents.viewer!, 'install', 'echo', '--on', beta, '--force');
    } finally {
      clearInterval(flood);
    }
    assert.equal(install.code, 0, install.stderr);
    assert.match(install.stdout, /^installed echo 1\.0\.0\n$/);
    assert.deepEqual((await json<BackendView[]>(agents.viewer!, 'ls', '--on', beta)).map((b) => b.name), ['echo']);
    assert.equal(agents.viewer!.child.exitCode, null);
    const after = await status(agents.viewer!);
    // A link cut and made again would read connected with a later `since`.
    assert.deepEqual(after.link, linkBefore, "the viewer's NATS link was never cut");
    const events = after.dropped.events;
    assert.ok(sent > 0);
    assert.deepEqual(events, { unsigned: sent, "signed by another node's key": sent, 'not an event': sent, 'names another node': sent });
  });
});
