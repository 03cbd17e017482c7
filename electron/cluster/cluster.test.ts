// A cluster the way a user runs one: a real nats-server and three real `hangar agent` processes, each with its own
// home, gallery and backend port range, driven through the CLI.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { after, before, describe, test } from 'node:test';
import type { RolloutView } from '../../shared/types.ts';
import { isAlive } from '../core/supervisor/identity.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { hangar, json, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { ClusterHealth } from './health.ts';
import { loadIdentity } from './node-key.ts';
import { MAX_REQUEST_BYTES } from './member.ts';
import { Caller } from './request.ts';
import { trustingHomes } from './test-cluster.ts';
import { addTrust } from './trust.ts';
import { startNats, type NatsServer } from './test-nats.ts';

const HEARTBEAT_MS = 300;
const CALL_TIMEOUT_MS = 1000;

describe('a cluster over NATS', () => {
  let root: string;
  let nats: NatsServer;
  const agents: Agent[] = [];
  const galleries: string[] = [];
  const ids: string[] = [];

  const clusterArgs = (name: string, ports: string) =>
    ['--cluster', nats.url, '--name', name, '--ports', ports, '--heartbeat', String(HEARTBEAT_MS), '--call-timeout', String(CALL_TIMEOUT_MS)];
  const startMember = async (i: number) => {
    agents[i] = await startAgent(join(root, `home-${i}`), galleries[i]!, clusterArgs(`n${i + 1}`, `23${i + 1}00-23${i + 1}99`));
    return agents[i]!;
  };
  const nodesSeenBy = (agent: Agent) => read(agent, 'nodes');

  before(async () => {
    root = await tempDir('cluster');
    nats = await startNats();
    await trustingHomes(['home-0', 'home-1', 'home-2', 'home-twin'].map((h) => join(root, h)));
    const v1 = await echoSource(root, '1.0.0');
    for (let i = 0; i < 3; i++) {
      galleries[i] = join(root, `index-${i}.yaml`);
      await writeGallery(galleries[i]!, [{ name: 'echo', uri: v1, version: '1.0.0' }]);
    }
  });

  after(async () => {
    for (const agent of agents) if (agent) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('three agents join, each seen by every viewer within 1 s, with its card', async () => {
    await startMember(0);
    for (const i of [1, 2]) {
      await startMember(i);
      const started = Date.now();
      const seen = await until(`n${i + 1} in n1's nodes`, async () => (await nodesSeenBy(agents[0]!)).find((c) => c.name === `n${i + 1}`), 1000);
      assert.ok(Date.now() - started <= 1000);
      assert.equal(seen.status, 'online');
    }
    const cards = await nodesSeenBy(agents[2]!);
    assert.deepEqual(cards.map((c) => [c.name, c.status, c.self]), [['n1', 'online', false], ['n2', 'online', false], ['n3', 'online', true]]);
    for (const card of cards) {
      assert.match(card.id, /^[0-9a-f]{16}$/);
      assert.equal(card.access, card.self ? 'self' : 'trusted');
      assert.equal(card.platform, process.platform);
      assert.equal(card.version, '0.1.0');
      assert.deepEqual(card.counts, { backends: 0, processes: 0, stale: 0, upgradable: 0, drift: 0 });
      ids.push(card.id);
    }
    assert.equal(new Set(ids).size, 3);
  });

  test('a call for another node runs there; its job progress reaches the caller', async () => {
    const install = await hangar(agents[0]!, 'install', 'echo', '--on', 'n2');
    assert.equal(install.code, 0, install.stderr);
    // Which phases a fast install shows depends on timing; a progress line before the end must arrive.
    assert.match(install.stderr, /install echo: (fetching|verifying|swapping)\b/);
    assert.equal(install.stdout, 'installed echo 1.0.0\n');
    const onN2 = await json<Array<{ name: string; version: string }>>(agents[0]!, 'ls', '--on', 'n2');
    assert.deepEqual(onN2.map((b) => [b.name, b.version]), [['echo', '1.0.0']]);
    assert.deepEqual(await json(agents[0]!, 'ls'), [], 'nothing was installed on the caller');
    assert.deepEqual((await json<Array<{ name: string }>>(agents[1]!, 'ls')).map((b) => b.name), ['echo'], 'n2 itself lists it');
    const byId = await json<Array<{ name: string }>>(agents[2]!, 'ls', '--on', ids[1]!);
    assert.deepEqual(byId.map((b) => b.name), ['echo'], 'an id names the node as well as its name');
    const unknown = await hangar(agents[0]!, 'ls', '--on', 'nope');
    assert.match(unknown.stderr, /^hangar: no node "nope" in the cluster/);
    const everyNode = await json<Array<{ name: string; status: string }>>(agents[0]!, 'ps', '--on', 'all');
    assert.deepEqual(everyNode.map((n) => [n.name, n.status]), [['n1', 'online'], ['n2', 'online'], ['n3', 'online']], 'ps --on all answers for every node');
  });

  test('a node refuses a trusted call naming another node and answers garbage with an error, then keeps serving', async () => {
    const viewerHome = join(root, 'viewer');
    const viewer = await loadIdentity(viewerHome);
    await addTrust(agents[1]!.home, viewer.publicKey, 'viewer');
    const nc = await connect({ servers: nats.url.replace('nats://', '') });
    const caller = new Caller(nc, viewer, '_INBOX', new ClusterHealth(() => undefined));
    try {
      const ask = async (data: string) => JSON.parse(await caller.request(ids[1]!, data, 2000)) as unknown;
      assert.deepEqual(await ask(JSON.stringify({ method: 'backends', params: { node: ids[2] } })), {
        ok: false, error: { code: 'forbidden', message: `this is node ${ids[1]}; the call names "${ids[2]}"` },
      });
      assert.deepEqual(await ask('{not json'), { ok: false, error: { code: 'invalid-request', message: 'the request is not a JSON object' } });
      const oversized = JSON.stringify({ method: 'backends', params: { node: ids[1], pad: 'x'.repeat(MAX_REQUEST_BYTES) } });
      assert.deepEqual(await ask(oversized), { ok: false, error: { code: 'invalid-request', message: 'the request is too large' } });
      assert.deepEqual(await ask(JSON.stringify({ method: 'rollout', params: { node: ids[1], name: 'echo' } })), {
        ok: false, error: { code: 'invalid-request', message: 'unknown method "rollout"' },
      });
      const bad = (await ask(JSON.stringify({ method: 'install', params: { node: ids[1], name: '../x' } }))) as { error: { code: string } };
      // A name against its rule is bad input, as the CLI's exit status 6 says; a request that is not one is invalid.
      assert.equal(bad.error.code, 'bad-input');
      const good = (await ask(JSON.stringify({ method: 'backends', params: { node: ids[1] } }))) as { ok: boolean; value: Array<{ name: string }> };
      assert.deepEqual([good.ok, good.value.map((b) => b.name)], [true, ['echo']]);
    } finally {
      caller.close();
      await nc.close();
    }
  });

  test('a stopped node turns offline within 3 heartbeats, calls to it time out clearly, and it comes back by itself', async () => {
    const n3 = agents[2]!;
    n3.child.kill('SIGSTOP');
    const stopped = Date.now();
    try {
      const offline = await until('n3 offline', async () => (await nodesSeenBy(agents[0]!)).find((c) => c.name === 'n3' && c.status === 'offline'), 3 * HEARTBEAT_MS + 1500);
      const lastBeat = Date.parse(offline.lastSeen);
      assert.ok(Date.now() - stopped <= 3 * HEARTBEAT_MS + 1500, 'offline soon after the stop');
      assert.match(offline.reason ?? '', /^no heartbeat since \d{4}-\d\d-\d\dT/);
      assert.ok(lastBeat <= stopped + 50);
      const started = Date.now();
      const call = await hangar(agents[0]!, 'ls', '--on', 'n3');
      assert.notEqual(call.code, 0);
      assert.equal(call.stderr, `hangar: node n3 (${ids[2]}) did not answer within 1 s\n`);
      assert.ok(Date.now() - started < CALL_TIMEOUT_MS + 2000, 'the call ended at its timeout, not later');
    } finally {
      n3.child.kill('SIGCONT');
    }
    await until('n3 online again', async () => (await nodesSeenBy(agents[0]!)).find((c) => c.name === 'n3' && c.status === 'online'), 2000);
    assert.deepEqual(await json(agents[0]!, 'ls', '--on', 'n3'), []);
  });

  test('a rolling upgrade goes node by node, waits for healthy processes, and halts at the first failure', async () => {
    const installed = await hangar(agents[0]!, 'install', 'echo', '--on', 'n3,n1', '--json');
    assert.equal(installed.code, 0, installed.stderr);
    assert.deepEqual((JSON.parse(installed.stdout) as Array<{ node: string; result: string }>).map((r) => [r.node, r.result]), [['n1', 'done'], ['n3', 'done']]);
    const loaded = await hangar(agents[2]!, 'load', 'echo', 'm1', '--on', 'n1');
    assert.equal(loaded.code, 0, loaded.stderr);
    const v2 = await echoSource(root, '1.1.0');
    await writeGallery(galleries[0]!, [{ name: 'echo', uri: v2, version: '1.1.0' }]);
    await writeGallery(galleries[1]!, [{ name: 'echo', uri: join(root, 'no-such-build'), version: '1.1.0' }]);
    await writeGallery(galleries[2]!, [{ name: 'echo', uri: v2, version: '1.1.0' }]);
    await until('echo upgradable on every node', async () => {
      const columns = await json<Array<{ backends: Array<{ upgradable: boolean }> | null }>>(agents[2]!, 'ls', '--on', 'all');
      return columns.length === 3 && columns.every((c) => c.backends?.[0]?.upgradable) ? true : undefined;
    }, 5000);

    const run = await hangar(agents[2]!, 'upgrade', 'echo', '--on', 'all', '--json');
    assert.equal(run.code, 1, run.stderr);
    const rollout = JSON.parse(run.stdout) as RolloutView;
    assert.equal(rollout.state, 'halted');
    assert.deepEqual(rollout.nodes.map((n) => [n.name, n.step, n.from, n.to]), [
      ['n1', 'upgraded', '1.0.0', '1.1.0'],
      ['n2', 'failed', '1.0.0', '1.1.0'],
      ['n3', 'skipped', null, null],
    ]);
    assert.match(rollout.nodes[1]!.reason ?? '', /no-such-build/);
    assert.equal(rollout.nodes[2]!.reason, 'halted: n2 failed');
    assert.match(run.stderr, /echo: n1 \([0-9a-f]+\): upgrading\n/);

    const versions = await json<Array<{ name: string; backends: Array<{ version: string }> }>>(agents[0]!, 'ls', '--on', 'all');
    assert.deepEqual(versions.map((c) => [c.name, c.backends[0]!.version]), [['n1', '1.1.0'], ['n2', '1.0.0'], ['n3', '1.0.0']]);
    const [m1] = await json<Array<{ model: string; dir: string; cwd: string }>>(agents[0]!, 'ps');
    assert.deepEqual([m1?.model, m1?.cwd], ['m1', 'ok'], "n1's process was respawned from the new build and is healthy");
    const matrix = await hangar(agents[0]!, 'ls', '--on', 'all');
    assert.match(matrix.stdout, /^BACKEND +N1 +N2 +N3\necho +1\.1\.0 +1\.0\.0 → 1\.1\.0 +1\.0\.0 → 1\.1\.0\n$/);
  });

  test('after a restart the node keeps its id, the rollout record is there, and one action rolls it back', async () => {
    const n3 = agents[2]!;
    n3.child.kill('SIGTERM');
    await once(n3.child, 'exit');
    // Its last card says it left. On a loaded machine that card can come after the viewer has given up on its
    // heartbeats ("no heartbeat since …"); the card's word then replaces that guess.
    const seen = () => nodesSeenBy(agents[0]!).then((cards) => cards.find((c) => c.name === 'n3'));
    await until('n3 shown as shut down', async () => ((await seen())?.reason === 'it shut down' ? true : undefined), 5000, async () => JSON.stringify(await seen()));
    assert.equal((await seen())?.status, 'offline');
    await startMember(2);
    const back = await until('n3 online again', async () => (await nodesSeenBy(agents[0]!)).find((c) => c.name === 'n3' && c.status === 'online'), 1000);
    assert.equal(back.id, ids[2]);

    const [recorded] = await read(agents[2]!, 'rollouts');
    assert.deepEqual(recorded?.nodes.map((n) => n.step), ['upgraded', 'failed', 'skipped']);
    const human = await hangar(agents[2]!, 'rollouts');
    assert.match(human.stdout, new RegExp(`^rollout ${recorded!.id}: echo → 1\\.1\\.0 on every node, halted`));

    const resumed = await hangar(agents[2]!, 'resume', '--rollout', recorded!.id);
    assert.deepEqual([resumed.code, resumed.stderr], [4, `hangar: rollout ${recorded!.id} is halted: there is nothing to resume; hangar rollback --rollout ${recorded!.id} undoes what it did, or hangar upgrade echo --on all --to 1.1.0 runs it again\n`]);
    const rolledBack = await hangar(agents[2]!, 'rollback', '--rollout', recorded!.id, '--json');
    assert.equal(rolledBack.code, 0, rolledBack.stderr);
    const final = JSON.parse(rolledBack.stdout) as RolloutView;
    assert.deepEqual([final.state, final.nodes.map((n) => n.step)], ['rolled-back', ['rolled-back', 'failed', 'skipped']]);
    const [echo] = await json<Array<{ version: string }>>(agents[2]!, 'ls', '--on', 'n1');
    assert.equal(echo?.version, '1.0.0');
    const again = await hangar(agents[2]!, 'rollback', '--rollout', recorded!.id);
    assert.match(again.stderr, /^hangar: rollout \S+ was rolled back already, at \S+Z\n$/);
  });

  test('kill -9: offline within 3 heartbeats; restarted, it is the same node, with no orphan left and its model back', async () => {
    const loaded = await json<{ pid: number }>(agents[0]!, 'load', 'echo', 'm2', '--on', 'n2');
    agents[1]!.child.kill('SIGKILL');
    const killed = Date.now();
    await until('n2 offline', async () => (await nodesSeenBy(agents[0]!)).find((c) => c.name === 'n2' && c.status === 'offline'), 3 * HEARTBEAT_MS + 1500);
    assert.ok(Date.now() - killed <= 3 * HEARTBEAT_MS + 1500);
    await startMember(1);
    const back = await until('n2 online', async () => (await nodesSeenBy(agents[0]!)).find((c) => c.name === 'n2' && c.status === 'online'), 1000);
    assert.equal(back.id, ids[1]);
    // The reaper stops a killed host's backends, so none is orphaned; the node that comes back starts the model
    // again in a new process, as its on-failure policy says of a process that ended while no host watched.
    await until('the killed host\'s backend reaped', async () => (isAlive(loaded.pid) ? undefined : true), 5000);
    type Row = { model: string; pid: number; state: string; message: string };
    const again = await until('m2 started again', async () => (await json<Row[]>(agents[0]!, 'ps', '--on', 'n2')).find((p) => p.model === 'm2' && p.state === 'ready'), 15_000);
    assert.notEqual(again.pid, loaded.pid);
    assert.match(again.message, new RegExp(`started again: pid ${loaded.pid} ended while Hangar was not running`));
    await until("n2's card counts its process", async () => (await nodesSeenBy(agents[0]!)).find((c) => c.id === ids[1] && c.counts.processes === 1), 3 * HEARTBEAT_MS);
  });

  test('two nodes with one name are told apart by id; a node forced to another capability resolves a meta to its own build', async () => {
    const metaGallery = join(root, 'index-meta.yaml');
    const v1 = await echoSource(root, '1.0.0');
    await writeGallery(metaGallery, [
      { name: 'llama', capabilities: { 'nvidia-cuda-12': 'cuda12-echo', default: 'cpu-echo' } },
      { name: 'cuda12-echo', uri: v1, version: '1.0.0' },
      { name: 'cpu-echo', uri: v1, version: '1.0.0' },
    ]);
    const twin = await startAgent(join(root, 'home-twin'), metaGallery, clusterArgs('n2', '23400-23499'), { ...process.env, HANGAR_FORCE_CAPABILITY: 'nvidia-cuda-12' });
    agents.push(twin);
    const cards = await until('the twin seen', async () => {
      const all = await nodesSeenBy(agents[0]!);
      return all.filter((c) => c.name === 'n2').length === 2 ? all : undefined;
    }, 15_000);
    const twins = cards.filter((c) => c.name === 'n2').map((c) => c.id);
    const ambiguous = await hangar(agents[0]!, 'ls', '--on', 'n2');
    assert.notEqual(ambiguous.code, 0);
    assert.equal(ambiguous.stderr, `hangar: 2 nodes are named "n2": pass one of their ids (${twins.join(', ')})\n`);
    const human = await hangar(agents[0]!, 'nodes');
    assert.equal(human.stdout.match(/name shared: tell apart by id/g)?.length, 2);

    const twinCard = cards.find((c) => c.name === 'n2' && c.id !== ids[1])!;
    assert.equal(twinCard.capability, 'nvidia-cuda-12');
    assert.notEqual(cards.find((c) => c.id === ids[0])!.capability, 'nvidia-cuda-12');
    const entries = await json<Array<{ name: string; meta: { resolves: string | null } | null }>>(agents[0]!, 'gallery', '--on', twinCard.id);
    assert.equal(entries.find((e) => e.name === 'llama')?.meta?.resolves, 'cuda12-echo');
  });

  test('after nats-server restarts, every node reconnects and is online again with no agent restarted', async () => {
    const port = Number(new URL(nats.url).port);
    const pids = agents.map((a) => a.child.pid);
    await nats.stop({ keepStore: true });
    const down = await until('the other nodes unknown while the server is down', async () => {
      const all = await nodesSeenBy(agents[0]!);
      return all.filter((c) => c.status === 'unknown').length === 3 ? all : undefined;
    }, 10_000);
    assert.deepEqual(down.filter((c) => c.status !== 'unknown').map((c) => [c.name, c.status, c.self]), [['n1', 'online', true]], "the host's own node stays online");
    assert.ok(down.filter((c) => !c.self).every((c) => c.reason === 'no broker'));
    nats = await startNats([], port, nats.storeDir!);
    const cards = await until('every node online again', async () => {
      const all = await nodesSeenBy(agents[0]!);
      return all.filter((c) => c.status === 'online').length === 4 ? all : undefined;
    }, 10_000);
    assert.deepEqual(cards.map((c) => c.name), ['n1', 'n2', 'n2', 'n3']);
    assert.deepEqual(agents.map((a) => a.child.pid), pids);
    assert.ok(agents.every((a) => a.child.exitCode === null));
    assert.deepEqual((await json<Array<{ name: string }>>(agents[0]!, 'ls', '--on', ids[1]!)).map((b) => b.name), ['echo']);
  });
});
