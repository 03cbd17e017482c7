// The cluster's stored state held to the standard of its calls, on Debian's nats-server 2.9 running the configuration
// `hangar cluster nats-config` writes: two nodes and a viewer set up from its printed commands, and a second viewer,
// mallory, in the configuration with her key but trusted by no one. Each attack is done as the adversarial run did it:
// forged and replayed records, a replayed call after a restart, reply subjects that name the JetStream API or another
// node's status, a consumer delivering into a node's call subject, an untrusted pin over a trusted one, and a
// coordinator's death. None may make a node act, and none may erase what a trusted viewer wrote.
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { hangar, json, read, until } from '../agent/test-agent.ts';
import { loadIdentity, type ClusterIdentity } from './node-key.ts';
import { sign } from './signed.ts';
import { BUCKETS, callSubject, kvSubject } from './subjects.ts';
import { clusterOf } from './cluster-id.ts';
import { clusterAgents, generatedCluster, writeSigned } from './test-cluster.ts';
import type { NatsServer } from './test-nats.ts';

/** This file's own fixed ports, below the ephemeral range: the server, then each agent's backends. */
const NATS_PORT = 27100;
const PORTS: Record<string, string> = { n1: '27110-27119', n2: '27120-27129', desk: '27130-27139' };
const HEARTBEAT_MS = 300;

describe("the cluster's stored state, under the generated NATS configuration", () => {
  let root: string;
  let gallery: string;
  let nats: NatsServer;
  let configFile: string;
  let outsider: ClusterIdentity;
  const homes: Record<string, string> = {};
  const keys: Record<string, { id: string; key: string }> = {};
  const passwords: Record<string, string> = {};
  const agentArgs: Record<string, string[]> = {};
  const { agents, start, ok } = clusterAgents({ homes, passwords, agentArgs }, () => gallery);
  const sources: Record<string, string> = {};

  const asUser = (user: string): Promise<NatsConnection> =>
    connect({ servers: `127.0.0.1:${NATS_PORT}`, user, pass: passwords[user]!, inboxPrefix: `_INBOX_${user}` });
  const bucketAs = async (nc: NatsConnection, bucket: string): Promise<KV> => new Kvm(jetstream(nc)).open(bucket, { allow_direct: true });
  const status = (machine: string) => read(agents[machine]!, 'clusterStatus');
  const desired = () => read(agents.desk!, 'desired');
  const versions = async () =>
    (await json<Array<{ name: string; backends: Array<{ name: string; version: string }> | null }>>(agents.desk!, 'ls', '--on', 'all'))
      .filter((c) => c.name !== 'desk')
      .map((c) => [c.name, c.backends?.find((b) => b.name === 'echo')?.version ?? null]);
  const offer = (version: string) => writeGallery(gallery, [{ name: 'echo', uri: sources[version]!, version }]);
  const restart = async (machine: string) => {
    agents[machine]!.child.kill('SIGKILL');
    await new Promise((resolve) => agents[machine]!.child.once('exit', resolve));
    await start(machine);
    await until(`${machine} online again`, async () => ((await read(agents.desk!, 'nodes')).find((c) => c.name === machine && c.status === 'online') ? true : undefined), 5000);
  };
  const quietly = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  before(async () => {
    root = await tempDir('stored-state');
    gallery = join(root, 'index.yaml');
    for (const version of ['1.0.0', '2.0.0']) sources[version] = await echoSource(root, version);
    await offer('1.0.0');
    // Every printed command but the trust in mallory's key: her credentials are valid, her key trusted by no one.
    const made = await generatedCluster({
      root, nodes: ['n1', 'n2'], viewers: ['desk', 'mallory'], distrusted: ['mallory'], port: NATS_PORT, ports: PORTS, heartbeatMs: HEARTBEAT_MS,
    });
    ({ nats, config: configFile } = made);
    Object.assign(homes, made.homes);
    Object.assign(keys, made.keys);
    Object.assign(passwords, made.passwords);
    Object.assign(agentArgs, made.agentArgs);
    outsider = await loadIdentity(join(root, 'outsider'));
    for (const machine of ['n1', 'n2', 'desk']) await start(machine);
    await until('both nodes online and trusting desk', async () => {
      const cards = await read(agents.desk!, 'nodes');
      return cards.filter((c) => c.status === 'online' && c.access === 'trusted').length === 2 ? true : undefined;
    }, 5000);
    await ok('desk', 'install', 'echo', '--on', 'n1,n2');
  });

  after(async () => {
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await nats?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('the configuration lets no one make a consumer or answer outside a viewer inbox, and confines each viewer\'s pins to its own key', async () => {
    const config = await readFile(configFile, 'utf8');
    assert.doesNotMatch(config, /allow_responses|CONSUMER|\$JS\.FC/);
    assert.match(config, new RegExp(`"\\$KV\\.${BUCKETS.desired}\\.\\*\\.${keys.desk!.id}"`));
    const node = await asUser('n2');
    try {
      const jsm = await jetstreamManager(node, { checkAPI: false });
      await assert.rejects(
        jsm.consumers.add(`KV_${BUCKETS.desired}`, { deliver_subject: callSubject(keys.n1!.id), ack_policy: 'none' as never }),
        /Permissions Violation|timeout/i,
        "a node's credentials cannot make a consumer that delivers into another node's call subject",
      );
    } finally {
      await node.close();
    }
  });

  test('a rollout record signed by a key no one trusts, naming desk as its coordinator, is listed as untrusted and never resumed, rolled back or waited on', async () => {
    const mallory = await asUser('mallory');
    const id = '6a0e4e7c-31f4-4c52-8f0e-5c1f3b8a9d21';
    const at = new Date().toISOString();
    try {
      const forged = {
        rollout: {
          id, backend: 'echo', version: '0.0.1', on: 'all', maxParallel: 1, state: 'interrupted', startedAt: at, finishedAt: null,
          coordinator: { id: keys.desk!.id, name: 'desk' },
          interrupted: { while: 'running', at, reason: 'its coordinator stopped' },
          nodes: ['n1', 'n2'].map((n) => ({ id: keys[n]!.id, name: n, step: 'pending', reason: null, from: null, to: null })),
        },
        heartbeatMs: 2000,
        previous: { backend: 'echo', version: '0.0.1', on: 'all', installMissing: false, rollout: null },
        beat: 1,
      };
      await writeSigned(await bucketAs(mallory, BUCKETS.rollouts), clusterOf(mallory.info), outsider, 'rollout', id, forged);
    } finally {
      await mallory.close();
    }
    await until('desk lists the record as untrusted', async () => ((await status('desk')).untrusted.some((r) => r.name === id && r.by === outsider.id) ? true : undefined), 5000);
    assert.equal((await read(agents.desk!, 'rollouts')).find((r) => r.id === id), undefined, 'not among the rollouts');
    assert.match((await ok('desk', 'rollouts')).stdout, new RegExp(`rollout ${id}, signed by key ${outsider.id}`));
    assert.match((await ok('desk', 'cluster', 'status')).stdout, /dropped \d+ records heard from the cluster \([^)]*signed by a key this host does not trust/);
    for (const verb of ['resume', 'rollback']) {
      const refused = await hangar(agents.desk!, verb, '--rollout', id);
      assert.notEqual(refused.code, 0, verb);
      assert.match(refused.stderr, new RegExp(`no rollout ${id}`), verb);
    }
    // It blocks no pin, and no node waits on it.
    await ok('desk', 'pin', 'echo', '1.0.0');
    await until('both nodes converged on the pin', async () => {
      const view = await desired();
      return ['n1', 'n2'].every((n) => view.nodes.some((s) => s.node === keys[n]!.id && s.state === 'converged')) ? true : undefined;
    }, 10_000);
    assert.deepEqual(await versions(), [['n1', '1.0.0'], ['n2', '1.0.0']]);
  });

  test("an untrusted viewer's pin never replaces a trusted one: it is listed beside it; her credentials cannot write in desk's name, and garbage written there with desk's erases nothing", async () => {
    const mallory = await asUser('mallory');
    try {
      const kv = await bucketAs(mallory, BUCKETS.desired);
      const pin = { backend: 'echo', version: '0.0.1', on: 'all', installMissing: true, rollout: null };
      const cluster = clusterOf(mallory.info);
      await writeSigned(kv, cluster, await loadIdentity(homes.mallory!), 'desired', `echo/${keys.mallory!.id}`, pin, `echo.${keys.mallory!.id}`);
      await assert.rejects(writeSigned(kv, cluster, outsider, 'desired', `echo/${keys.desk!.id}`, pin, `echo.${keys.desk!.id}`), /Permissions Violation/);
    } finally {
      await mallory.close();
    }
    await until("mallory's pin listed as untrusted", async () => ((await status('desk')).untrusted.some((r) => r.bucket === 'desired' && r.by === keys.mallory!.id) ? true : undefined), 5000);
    const shown = await desired();
    assert.deepEqual(shown.desired.map((d) => [d.backend, d.version, d.by]), [['echo', '1.0.0', keys.desk!.id]]);
    assert.match((await ok('desk', 'desired')).stdout, new RegExp(`desired version of echo, signed by key ${keys.mallory!.id}`));

    // desk's NATS password without desk's key: what is written over desk's pin does not erase it, here or on a node.
    const stolen = await asUser('desk');
    try {
      await (await bucketAs(stolen, BUCKETS.desired)).put(`echo.${keys.desk!.id}`, '{"garbage":true}');
    } finally {
      await stolen.close();
    }
    await until('the garbage dropped', async () => ((await status('desk')).dropped.records.unsigned ? true : undefined), 5000);
    assert.deepEqual((await desired()).desired.map((d) => [d.backend, d.version, d.by]), [['echo', '1.0.0', keys.desk!.id]]);
    await quietly(1000);
    assert.deepEqual(await versions(), [['n1', '1.0.0'], ['n2', '1.0.0']], 'no node moved');
  });

  test('a pin replayed after its unpin never takes the nodes back, also after a restart; a call replayed after a restart is refused', async () => {
    await ok('desk', 'pin', 'echo', '1.0.0');
    const thief = await asUser('desk');
    const listener = await asUser('n1');
    try {
      const kv = await bucketAs(thief, BUCKETS.desired);
      const saved = (await kv.get(`echo.${keys.desk!.id}`))!.value;
      await ok('desk', 'unpin', 'echo');
      await offer('2.0.0');
      for (const node of ['n1', 'n2']) {
        await ok('desk', 'gallery', '--refresh', '--on', node);
        await ok('desk', 'upgrade', 'echo', '--on', node);
      }
      assert.deepEqual(await versions(), [['n1', '2.0.0'], ['n2', '2.0.0']]);

      // A genuine delete, caught on its way to n1, then put right.
      const caught = new Promise<Msg>((resolve) => listener.subscribe(callSubject(keys.n1!.id), { max: 1, callback: (_e, m) => resolve(m) }));
      await listener.flush();
      await ok('desk', 'delete', 'echo', '--on', 'n1');
      const call = await caught;
      await ok('desk', 'install', 'echo', '--on', 'n1');

      await kv.put(`echo.${keys.desk!.id}`, saved);
      await restart('n1');
      const replayer = await asUser('mallory');
      try {
        replayer.publish(call.subject, call.data, { reply: call.reply!, headers: call.headers! });
        await replayer.flush();
      } finally {
        await replayer.close();
      }
      await until('n1 refused the replayed delete', async () => ((await status('n1')).refused.replayed ? true : undefined), 5000);
    } finally {
      await thief.close();
      await listener.close();
    }
    await quietly(2 * HEARTBEAT_MS + 1000);
    assert.deepEqual(await versions(), [['n1', '2.0.0'], ['n2', '2.0.0']], 'no node went back to 1.0.0, and n1 still has echo');
    assert.deepEqual((await desired()).desired, [], 'the old pin is not in force for desk either');
  });

  test('a reply subject naming the JetStream API or another node\'s status is never answered on', async () => {
    const before = await desired();
    const reader = await asUser('desk');
    const values = async () => (await (await bucketAs(reader, BUCKETS.desired)).status()).values;
    const storedBefore = await values();
    const mallory = await asUser('mallory');
    try {
      const subject = callSubject(keys.n1!.id);
      const body = Buffer.from(JSON.stringify({ method: 'backends', params: { node: keys.n1!.id } }));
      for (const reply of [`$JS.API.STREAM.PURGE.KV_${BUCKETS.desired}`, kvSubject(BUCKETS.status, keys.n2!.id)]) {
        const stamp = { at: String(Date.now()), nonce: `n${String(Math.random()).slice(2).padEnd(20, '0')}` };
        mallory.publish(subject, body, { reply, headers: sign(outsider, 'call', subject, keys.n1!.id, reply, stamp, body) });
        mallory.publish(subject, body, { reply });
      }
      await mallory.flush();
    } finally {
      await mallory.close();
    }
    await until('n1 refused all four', async () => (((await status('n1')).refused['reply subject not an inbox'] ?? 0) >= 4 ? true : undefined), 5000);
    const after = await desired();
    assert.deepEqual(after.nodes.filter((n) => n.node === keys.n2!.id), before.nodes.filter((n) => n.node === keys.n2!.id), "n2's status as it was");
    assert.equal(await values(), storedBefore, 'the desired bucket was not purged');
    await reader.close();
  });

  test("a coordinator's death makes no node write what its role may not: no permission is refused anywhere", async () => {
    await offer('1.0.0');
    const started = hangar(agents.desk!, 'upgrade', 'echo', '--on', 'all', '--to', '1.0.0');
    await until('the rollout running', async () => ((await read(agents.desk!, 'rollouts')).some((r) => r.state === 'running') ? true : undefined), 5000);
    agents.desk!.child.kill('SIGKILL');
    await started;
    await quietly(4 * HEARTBEAT_MS + 500);
    await start('desk');
    await until('desk marks its own rollout interrupted', async () => ((await read(agents.desk!, 'rollouts')).some((r) => r.state === 'interrupted') ? true : undefined), 5000);
    for (const machine of ['n1', 'n2', 'desk']) assert.deepEqual((await status(machine)).violations, [], `${machine} was refused nothing`);
  });
});
