// Who can make JetStream write, under the configuration `hangar cluster nats-config` writes, on Debian's nats-server
// 2.9: two nodes and a viewer set up from its printed commands, and a second viewer, mallory, whose credentials are
// valid and whose key no one trusts. The adversarial run's attacks, as it did them: JetStream's answers to a node's
// read requests sent onto bucket subjects (a stream's info into the rollouts bucket, a direct get copied over the
// viewer's pin and another node's status), rollup headers on a user's own key, the JetStream API beyond reading,
// and buckets flooded with large values and with junk keys, which an admin viewer, ops, then sweeps away. Each is
// refused or bounded, no bucket changes, no node moves and the views still work.
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { jetstream, jetstreamManager, type StreamInfo } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { json, read, until } from '../agent/test-agent.ts';
import { loadIdentity } from './node-key.ts';
import { seal } from './store/sealed.ts';
import { clusterAgents, generatedCluster } from './test-cluster.ts';
import { BUCKET_LIMITS } from './store/store-limits.ts';
import { BUCKETS, kvSubject, type BucketName } from './subjects.ts';
import type { NatsServer } from './test-nats.ts';

/** This file's own fixed ports, below the ephemeral range: the server, then each agent's backends. */
const NATS_PORT = 27300;
const PORTS: Record<string, string> = { n1: '27310-27319', n2: '27320-27329', desk: '27330-27339', ops: '27340-27349' };
/** How long ops leaves a value it does not take in the store, here (seconds). */
const SWEEP_AFTER = 1;
const HEARTBEAT_MS = 300;
/** The buckets a cluster set up with nats-config keeps (the members bucket is an invited cluster's: join.test.ts). */
const STORED = [BUCKETS.desired, BUCKETS.rollouts, BUCKETS.status];
/** Where mallory's values claim to be written: no cluster, over no revision (she is trusted by no one anyway). */
const UNPLACED = { cluster: '', after: 0 };

/** What a bucket holds: each key's revision, and its last sequence (any write, taken or not, moves nothing else). */
type Held = { last: number; subjects: Record<string, number> };

describe('who can make JetStream write, under the generated NATS configuration', () => {
  let root: string;
  let gallery: string;
  let nats: NatsServer;
  let configFile: string;
  const homes: Record<string, string> = {};
  const keys: Record<string, { id: string; key: string }> = {};
  const passwords: Record<string, string> = {};
  const agentArgs: Record<string, string[]> = {};
  const { agents, start, ok } = clusterAgents({ homes, passwords, agentArgs }, () => gallery);

  const asUser = (user: string): Promise<NatsConnection> =>
    connect({ servers: `127.0.0.1:${NATS_PORT}`, user, pass: passwords[user]!, inboxPrefix: `_INBOX_${user}` });
  const desired = () => read(agents.desk!, 'desired');
  const versions = async () =>
    (await json<Array<{ name: string; backends: Array<{ name: string; version: string }> | null }>>(agents.desk!, 'ls', '--on', 'all'))
      .filter((c) => c.name !== 'desk')
      .map((c) => [c.name, c.backends?.find((b) => b.name === 'echo')?.version ?? null]);
  const info = async (bucket: BucketName): Promise<StreamInfo> => {
    const nc = await asUser('desk');
    try {
      return await (await jetstreamManager(nc, { checkAPI: false })).streams.info(`KV_${bucket}`, { subjects_filter: '>' });
    } finally {
      await nc.close();
    }
  };
  const held = async (): Promise<Record<string, Held>> => {
    const all: Record<string, Held> = {};
    for (const bucket of STORED) {
      const { state } = await info(bucket);
      all[bucket] = { last: state.last_seq, subjects: state.subjects ?? {} };
    }
    return all;
  };
  const deskPin = async () => {
    const nc = await asUser('desk');
    try {
      const kv = await new Kvm(jetstream(nc)).open(BUCKETS.desired, { allow_direct: true });
      return Buffer.from((await kv.get(`echo.${keys.desk!.id}`))!.value).toString('base64');
    } finally {
      await nc.close();
    }
  };

  before(async () => {
    root = await tempDir('store-writes');
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    // Every printed command but the trust in mallory's key: her credentials are valid, her key trusted by no one.
    const made = await generatedCluster({
      root, nodes: ['n1', 'n2'], viewers: ['desk', 'mallory', 'ops'], admins: ['ops'], distrusted: ['mallory'], port: NATS_PORT, ports: PORTS, heartbeatMs: HEARTBEAT_MS,
    });
    ({ nats, config: configFile } = made);
    Object.assign(homes, made.homes);
    Object.assign(keys, made.keys);
    Object.assign(passwords, made.passwords);
    Object.assign(agentArgs, made.agentArgs);
    // ops sweeps after an hour as printed; here after a second, and only from the last test on.
    const at = agentArgs.ops!.indexOf('--cluster-sweep');
    assert.equal(agentArgs.ops![at + 1], '3600', agentArgs.ops!.join(' '));
    agentArgs.ops![at + 1] = String(SWEEP_AFTER);
    for (const machine of ['n1', 'n2', 'desk']) await start(machine);
    await until('both nodes online and trusting desk', async () => {
      const cards = await read(agents.desk!, 'nodes');
      return cards.filter((c) => c.status === 'online' && c.access === 'trusted').length === 2 ? true : undefined;
    }, 5000);
    await ok('desk', 'pin', 'echo', '1.0.0');
    await until('both nodes converged on the pin, each saying so in its status', async () => {
      const view = await desired();
      return ['n1', 'n2'].every((n) => view.nodes.some((s) => s.node === keys[n]!.id && s.state === 'converged')) ? true : undefined;
    }, 15_000);
    // A value of mallory's own, under her own key: what a direct get could copy elsewhere.
    const mallory = await asUser('mallory');
    try {
      const pin = { backend: 'zzz', version: '6.6.6', on: 'all', installMissing: true, rollout: null };
      await (await new Kvm(jetstream(mallory)).open(BUCKETS.desired, { allow_direct: true })).put(`zzz.${keys.mallory!.id}`, seal(await loadIdentity(homes.mallory!), 'desired', `zzz/${keys.mallory!.id}`, UNPLACED, pin));
    } finally {
      await mallory.close();
    }
  });

  after(async () => {
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await nats?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('the configuration listens where its URL says, and gives each user only the JetStream API its role reads with', async () => {
    const config = await readFile(configFile, 'utf8');
    assert.match(config, new RegExp(`^listen: "127\\.0\\.0\\.1:${NATS_PORT}"$`, 'm'), 'a loopback URL binds loopback, on its port');
    const users = [...config.matchAll(/user: "([^"]+)"[^\n]*\n\s*permissions: \{\n\s*publish: \{ allow: (\[[^\n]*\]) \}/g)];
    assert.equal(users.length, 5);
    for (const [, user, allow] of users) {
      const api = (JSON.parse(allow!) as string[]).filter((s) => s.startsWith('$JS.'));
      const viewer = ['desk', 'mallory', 'ops'].includes(user!);
      const allowed = Object.values(BUCKETS).flatMap((b) => [
        `$JS.API.STREAM.INFO.KV_${b}`, `$JS.API.DIRECT.GET.KV_${b}.>`,
        ...(viewer ? [`$JS.API.STREAM.CREATE.KV_${b}`] : []),
        ...(user === 'ops' && b !== BUCKETS.status ? [`$JS.API.STREAM.MSG.DELETE.KV_${b}`] : []),
      ]);
      assert.deepEqual(api.filter((s) => !allowed.includes(s)), [], `${user} may publish nothing else on the JetStream API`);
    }
    for (const user of ['n1', 'desk', 'mallory']) {
      const nc = await asUser(user);
      try {
        for (const api of ['STREAM.PURGE', 'STREAM.DELETE', 'STREAM.UPDATE', 'STREAM.MSG.DELETE', 'STREAM.SNAPSHOT', 'CONSUMER.CREATE']) {
          await assert.rejects(nc.request(`$JS.API.${api}.KV_${BUCKETS.desired}`, '{}', { timeout: 5000 }), /Permissions Violation/, `${user}: ${api}`);
        }
        await assert.rejects(nc.request('$JS.API.INFO', '', { timeout: 5000 }), /Permissions Violation/, `${user}: INFO`);
      } finally {
        await nc.close();
      }
    }
  });

  test("JetStream's answers to a node's read requests go back to its users' account: no reply subject it names writes a bucket", async () => {
    const before = await held();
    const pin = await deskPin();
    const view = await desired();
    const attacks: Array<[string, string]> = [
      [`$JS.API.STREAM.INFO.KV_${BUCKETS.desired}`, kvSubject(BUCKETS.rollouts, 'evil')],
      [`$JS.API.DIRECT.GET.KV_${BUCKETS.desired}.${kvSubject(BUCKETS.desired, `zzz.${keys.mallory!.id}`)}`, kvSubject(BUCKETS.desired, `echo.${keys.desk!.id}`)],
      [`$JS.API.DIRECT.GET.KV_${BUCKETS.desired}.${kvSubject(BUCKETS.desired, `zzz.${keys.mallory!.id}`)}`, kvSubject(BUCKETS.status, keys.n2!.id)],
      // An answer routed back onto the subject of another imported service goes no further either.
      [`$JS.API.STREAM.INFO.KV_${BUCKETS.rollouts}`, `$JS.API.STREAM.CREATE.KV_${BUCKETS.rollouts}`],
    ];
    // desk hears every answer arrive in the users' account, which is how the attack is known to have been answered.
    const listener = await asUser('desk');
    const n1 = await asUser('n1');
    try {
      const heard: string[] = [];
      for (const [, reply] of attacks.slice(0, 3)) listener.subscribe(reply, { callback: (_e, m) => void heard.push(m.subject) });
      await listener.flush();
      for (const [subject, reply] of attacks) n1.publish(subject, '', { reply });
      await n1.flush();
      await until('the three answers delivered into the users\' account', async () => (heard.length >= 3 ? true : undefined), 5000);
    } finally {
      await n1.close();
      await listener.close();
    }
    assert.deepEqual(await held(), before, 'no bucket holds anything new');
    assert.equal(await deskPin(), pin, "desk's pin is as desk wrote it");
    const now = await desired();
    assert.deepEqual(now.desired, view.desired);
    assert.deepEqual(now.nodes.map((n) => [n.node, n.state]), view.nodes.map((n) => [n.node, n.state]), "both nodes' status as it was");
    assert.deepEqual(await versions(), [['n1', '1.0.0'], ['n2', '1.0.0']]);
  });

  test("a rollup header is refused: no user's write on its own key purges the others", async () => {
    for (const bucket of STORED) {
      const { config } = await info(bucket);
      assert.equal(config.allow_rollup_hdrs, false, `${bucket} refuses rollups`);
      assert.equal(config.max_msgs_per_subject, 1, bucket);
      assert.equal(config.max_msg_size, BUCKET_LIMITS[bucket].max_msg_size, bucket);
      assert.equal(config.max_msgs, BUCKET_LIMITS[bucket].max_msgs, bucket);
    }
    const before = await held();
    const pin = await deskPin();
    const rollup = headers();
    rollup.set('Nats-Rollup', 'all');
    for (const [user, subject] of [['n1', kvSubject(BUCKETS.status, keys.n1!.id)], ['mallory', kvSubject(BUCKETS.desired, `echo.${keys.mallory!.id}`)]] as const) {
      const nc = await asUser(user);
      try {
        await assert.rejects(jetstream(nc).publish(subject, 'x', { headers: rollup }), /rollup not permitted/, user);
      } finally {
        await nc.close();
      }
    }
    assert.deepEqual(await held(), before);
    assert.equal(await deskPin(), pin);
    assert.deepEqual((await desired()).nodes.map((n) => n.state), ['converged', 'converged']);
  });

  test('floods are bounded: large values refused, junk keys capped, a viewer restarting on a full bucket reads it in bounded time and memory', async () => {
    const malloryKey = await loadIdentity(homes.mallory!);
    const nc = await asUser('mallory');
    const kv = await new Kvm(jetstream(nc)).open(BUCKETS.desired, { allow_direct: true });
    const junk = (i: number, bytes: number) => {
      const key = `junk${i}/${keys.mallory!.id}`;
      return seal(malloryKey, 'desired', key, UNPLACED, { backend: `junk${i}`, version: '1.0.0', on: 'x'.repeat(bytes), installMissing: true, rollout: null });
    };
    let refused = 0;
    const startedLarge = Date.now();
    for (let i = 0; i < 128; i++) await kv.put(`junk${i}.${keys.mallory!.id}`, junk(i, 512 * 1024)).catch((error: Error) => (assert.match(error.message, /message size exceeds maximum/), refused++));
    assert.equal(refused, 128, 'every value of 512 KiB refused by the desired bucket');
    const largeMs = Date.now() - startedLarge;

    const limit = BUCKET_LIMITS[BUCKETS.desired].max_msgs;
    const heldBefore = (await info(BUCKETS.desired)).state.messages;
    let stored = 0;
    let full: Error | null = null;
    for (let i = 0; !full && i < limit + 10; i++) {
      await kv.put(`junk${i}.${keys.mallory!.id}`, junk(i, 200)).then(() => stored++, (error: Error) => (full = error));
    }
    await nc.close();
    assert.match(String(full), /maximum messages exceeded/);
    assert.equal(stored + heldBefore, limit, 'the bucket holds no more keys than its cap');

    // desk restarts on the full bucket: it reads it all, lists desk's pin, and says what it did not take.
    agents.desk!.child.kill('SIGKILL');
    await new Promise((resolve) => agents.desk!.child.once('exit', resolve));
    const restarted = Date.now();
    await start('desk');
    // Every key but desk's own pin is mallory's: not taken, each counted.
    const untaken = () => read(agents.desk!, 'clusterStatus').then((s) => Object.values(s.dropped.records).reduce((a, b) => a + b, 0));
    await until('desk read the whole bucket', async () => ((await untaken()) >= limit - 1 ? true : undefined), 60_000);
    const readMs = Date.now() - restarted;
    const [cpu, peak] = await usage(agents.desk!.child.pid!);
    assert.deepEqual((await desired()).desired.map((d) => [d.backend, d.version, d.by]), [['echo', '1.0.0', keys.desk!.id]]);
    assert.deepEqual(await versions(), [['n1', '1.0.0'], ['n2', '1.0.0']], 'no node moved');
    console.log(`store floods: 128 values of 512 KiB refused in ${largeMs} ms; ${stored} junk keys filled the bucket to its cap of ${limit}; desk read it in ${readMs} ms, ${cpu.toFixed(2)} s CPU, peak RSS ${peak} MiB`);
    assert.ok(cpu < 6, `desk spent ${cpu} s of CPU reading ${limit} keys`);
    assert.ok(peak < 400, `desk peaked at ${peak} MiB`);
  });

  test("an admin viewer sweeps away what it does not take, once old enough: the junk goes, desk's pin and the nodes' status stay", async () => {
    const mallory = await asUser('mallory');
    try {
      const id = 'f1c6f0a2-6f42-4d7e-9d0b-6a3c2b1e0f99';
      const at = new Date().toISOString();
      const record = {
        rollout: { id, backend: 'echo', version: '6.6.6', on: 'all', maxParallel: 1, state: 'halted', startedAt: at, finishedAt: at, coordinator: { id: keys.mallory!.id, name: 'mallory' }, interrupted: null, nodes: [] },
        heartbeatMs: 2000, previous: null, beat: 0,
      };
      const rollouts = await new Kvm(jetstream(mallory)).open(BUCKETS.rollouts, { allow_direct: true });
      await rollouts.put(id, seal(await loadIdentity(homes.mallory!), 'rollout', id, UNPLACED, record));
      // A delete marker holds a key too.
      await rollouts.delete('a0c6f0a2-6f42-4d7e-9d0b-6a3c2b1e0f98');
    } finally {
      await mallory.close();
    }
    const pin = await deskPin();
    const statuses = (await held())[BUCKETS.status];
    await start('ops');
    await until('the desired bucket holds desk\'s pin alone, and the rollouts bucket nothing', async () => {
      const [wanted, rollouts] = await Promise.all([info(BUCKETS.desired), info(BUCKETS.rollouts)]);
      return wanted.state.messages === 1 && rollouts.state.messages === 0 ? true : undefined;
    }, 30_000);
    assert.equal(await deskPin(), pin, "desk's pin as desk wrote it");
    assert.deepEqual((await held())[BUCKETS.status], statuses, "the nodes' status untouched");
    // The bucket has room again: desk pins as before.
    await ok('desk', 'pin', 'echo', '1.0.0');
    assert.deepEqual((await desired()).desired.map((d) => [d.backend, d.version, d.by]), [['echo', '1.0.0', keys.desk!.id]]);
    assert.deepEqual(await versions(), [['n1', '1.0.0'], ['n2', '1.0.0']], 'no node moved');
  });
});

/** A process's CPU seconds so far and its peak resident memory in MiB, from /proc. */
async function usage(pid: number): Promise<[number, number]> {
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  const ticks = Number(stat[11]) + Number(stat[12]);
  const hwm = /VmHWM:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))![1]!;
  return [ticks / 100, Math.round(Number(hwm) / 1024)];
}
