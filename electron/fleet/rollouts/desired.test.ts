// Desired state kept by the cluster, on a real nats-server with JetStream and three real agents: a pin the live nodes
// follow at once and a returning node follows by itself (its models reloaded), a version a node's galleries do not
// offer shown as drift and never half-installed, retries that back off and give up, a pin from a key no node
// trusts (or forged into the bucket) never acted on, and a broker outage that leaves every pin in place.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { after, before, describe, test } from 'node:test';
import type { ProcessView } from '../../../shared/types.ts';
import { echoSource, tempDir, writeGallery } from '../../core/testing/fixtures.ts';
import { hangar, json, read, startAgent, until, type Agent } from '../../agent/test-agent.ts';
import { loadIdentity } from '../../cluster/node-key.ts';
import { seal } from '../../cluster/store/sealed.ts';
import { clusterOf } from '../../cluster/cluster-id.ts';
import { BUCKETS } from '../../cluster/subjects.ts';
import { trustingHomes } from '../../cluster/test-cluster.ts';
import { startNats, type NatsServer } from '../../cluster/test-nats.ts';

const HEARTBEAT_MS = 300;
type Column = { name: string; status: string; backends: Array<{ name: string; version: string; wanted: string | null }> | null };

describe('desired versions kept by the cluster', () => {
  let root: string;
  let nats: NatsServer;
  const agents: Agent[] = [];
  const galleries: string[] = [];
  const sources: Record<string, string> = {};

  const args = (i: number, extra: string[] = []) => ['--cluster', nats.url, '--name', `d${i + 1}`, '--ports', `260${i}0-260${i}9`, '--heartbeat', String(HEARTBEAT_MS), ...extra];
  const start = async (i: number, extra: string[] = []) => (agents[i] = await startAgent(join(root, `home-${i}`), galleries[i]!, args(i, extra)));
  const offer = async (i: number, version: string, uri = sources[version]!) => writeGallery(galleries[i]!, [{ name: 'echo', uri, version }]);
  const versions = async () => (await json<Column[]>(agents[0]!, 'ls', '--on', 'all')).map((c) => [c.name, c.backends?.find((b) => b.name === 'echo')?.version ?? c.status]);
  const desired = () => read(agents[0]!, 'desired');
  const said = async (node: string) => (await desired()).nodes.find((n) => n.node === node && n.backend === 'echo');
  const idOf = async (name: string) => (await read(agents[0]!, 'nodes')).find((c) => c.name === name)!.id;

  before(async () => {
    root = await tempDir('desired');
    nats = await startNats();
    for (const version of ['1.0.0', '2.0.0', '3.0.0']) sources[version] = await echoSource(root, version);
    await trustingHomes([0, 1, 2].map((i) => join(root, `home-${i}`)));
    for (let i = 0; i < 3; i++) {
      galleries[i] = join(root, `index-${i}.yaml`);
      await offer(i, '1.0.0');
      await start(i);
    }
    await until('three nodes online', async () => ((await read(agents[0]!, 'nodes')).filter((c) => c.status === 'online').length === 3 ? true : undefined), 5000);
    const installed = await hangar(agents[0]!, 'install', 'echo', '--on', 'all');
    assert.equal(installed.code, 0, installed.stderr);
    assert.equal((await hangar(agents[2]!, 'load', 'echo', 'm1')).code, 0);
  });

  after(async () => {
    for (const agent of agents) agent?.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('a pin is followed at once by the live nodes; a node that was away follows it within 10 s of its return, models reloaded', async () => {
    const away = agents[2]!;
    away.child.kill('SIGTERM');
    await once(away.child, 'exit');
    for (let i = 0; i < 3; i++) await offer(i, '2.0.0');
    const pinned = await hangar(agents[0]!, 'pin', 'echo', '2.0.0', '--on', 'all');
    assert.equal(pinned.code, 0, pinned.stderr);
    await until('d1 and d2 at 2.0.0', async () => {
      const now = await versions();
      return now[0]![1] === '2.0.0' && now[1]![1] === '2.0.0' ? true : undefined;
    }, 15_000);
    assert.deepEqual((await versions())[2], ['d3', 'offline']);

    const returned = Date.now();
    await start(2, ['--restore-backends']);
    const m1 = await until('d3 at 2.0.0 with m1 ready in the new build', async () => {
      const [echo] = await json<Array<{ version: string }>>(agents[2]!, 'ls');
      const [p] = await json<ProcessView[]>(agents[2]!, 'ps');
      return echo?.version === '2.0.0' && p?.state === 'ready' && p.cwd === 'ok' ? p : undefined;
    }, 10_000);
    console.log(`d3 converged ${Date.now() - returned} ms after it was started again`);
    assert.ok(Date.now() - returned <= 10_000);
    assert.deepEqual([m1.model, m1.loaded], ['m1', true]);
    assert.equal(m1.dir, join(agents[2]!.home, 'backends', 'echo'));
    const d3 = await until('d3 says it converged', async () => ((await said(await idOf('d3')))?.state === 'converged' ? true : undefined), 3000);
    assert.ok(d3);
    const matrix = await hangar(agents[0]!, 'ls', '--on', 'all');
    assert.match(matrix.stdout, /^BACKEND +D1 +D2 +D3\necho +2\.0\.0 +2\.0\.0 +2\.0\.0\n$/);
  });

  test("a version a node's galleries do not offer is drift, said by the node and shown in the matrix; nothing is half-installed", async () => {
    await offer(0, '3.0.0');
    await offer(2, '3.0.0');
    const before = await json<Array<{ version: string; installedAt: string }>>(agents[1]!, 'ls');
    assert.equal((await hangar(agents[1]!, 'pin', 'echo', '3.0.0')).code, 0);
    const d2 = await idOf('d2');
    const drift = await until('d2 drifted', async () => {
      const s = await said(d2);
      return s?.state === 'drifted' ? s : undefined;
    }, 10_000);
    assert.equal(drift.reason, "3.0.0 wanted, not offered by this node's galleries");
    await until('d1 and d3 at 3.0.0', async () => {
      const now = await versions();
      return now[0]![1] === '3.0.0' && now[2]![1] === '3.0.0' ? true : undefined;
    }, 15_000);
    const matrix = await hangar(agents[0]!, 'ls', '--on', 'all');
    assert.match(matrix.stdout, /^BACKEND +D1 +D2 +D3\necho +3\.0\.0 +2\.0\.0 \(3\.0\.0 wanted\) +3\.0\.0\n/);
    assert.match(matrix.stdout, new RegExp(`\\nd2 \\(${d2}\\): echo: 3\\.0\\.0 wanted, not offered by this node's galleries\\n$`));
    const columns = await json<Column[]>(agents[0]!, 'ls', '--on', 'all');
    assert.deepEqual(columns.map((c) => c.backends?.[0]?.wanted), [null, '3.0.0', null]);
    assert.deepEqual(await json(agents[1]!, 'ls'), before, 'd2 was not touched');
    const card = (await read(agents[0]!, 'nodes')).find((c) => c.name === 'd2')!;
    assert.equal(card.counts.drift, 1);
  });

  test('a failing upgrade is tried 5 times, 1 s doubling, then given up with the reason', async () => {
    await offer(1, '4.0.0', join(root, 'no-such-build'));
    const started = Date.now();
    assert.equal((await hangar(agents[0]!, 'pin', 'echo', '4.0.0', '--on', 'd2')).code, 0);
    const d2 = await idOf('d2');
    const waiting = await until('d2 waiting to try again', async () => {
      const s = await said(d2);
      return s?.state === 'waiting' && s.tries >= 1 ? s : undefined;
    }, 10_000);
    assert.match(waiting.reason ?? '', new RegExp(`^try ${waiting.tries + 1} of 5 .*no-such-build`));
    const failed = await until('d2 gave up', async () => {
      const s = await said(d2);
      return s?.state === 'failed' ? s : undefined;
    }, 40_000);
    const tookMs = Date.now() - started;
    assert.equal(failed.tries, 5);
    assert.match(failed.reason ?? '', /^gave up after 5 tries: .*no-such-build/);
    // Four waits between five tries: 1 + 2 + 4 + 8 s.
    assert.ok(tookMs >= 15_000, `gave up after ${tookMs} ms`);
    assert.equal((await json<Array<{ version: string }>>(agents[1]!, 'ls'))[0]!.version, '2.0.0', 'the failed upgrades were rolled back');
    const table = await hangar(agents[0]!, 'desired');
    assert.match(table.stdout, new RegExp(`\\nd2 +${d2} +echo +4\\.0\\.0 +2\\.0\\.0 +failed +gave up after 5 tries`), "a node is named, its id beside it");
  });

  test('a build that fails its health gate is tried once: the running model is not restarted again and again', async () => {
    const broken = await echoSource(root, '5.0.0');
    await writeFile(join(broken, 'run.sh'), '#!/bin/sh\necho "cannot start: missing libcuda.so" >&2\nexit 7\n', { mode: 0o755 });
    await offer(2, '5.0.0', broken);
    const d3 = await idOf('d3');
    const restarts = async () => (await json<ProcessView[]>(agents[2]!, 'ps')).find((p) => p.model === 'm1')!.restarts;
    const before = await restarts();
    assert.equal((await hangar(agents[0]!, 'pin', 'echo', '5.0.0', '--on', 'd3')).code, 0);
    const failed = await until('d3 gave up on the build', async () => {
      const s = await said(d3);
      return s?.state === 'failed' ? s : undefined;
    }, 30_000);
    assert.equal(failed.tries, 1);
    assert.match(failed.reason ?? '', /^its build failed here, not tried again until the pin changes: upgrade echo to 5\.0\.0 failed: .*missing libcuda\.so.*; rolled back to 3\.0\.0/);
    const afterOne = await restarts();
    assert.ok(afterOne - before <= 2, `one try: m1 went down and came back once (↺ ${before} → ${afterOne})`);
    // Past the 1 s and 2 s backoffs a retry would have waited.
    await new Promise((resolve) => setTimeout(resolve, 4000));
    assert.equal(await restarts(), afterOne, 'no further try touched m1');
    assert.equal((await said(d3))?.tries, 1);
    assert.equal((await json<Array<{ version: string }>>(agents[2]!, 'ls'))[0]!.version, '3.0.0');
    await offer(2, '3.0.0');
  });

  test('unpin: the nodes keep what they run, and no drift is left', async () => {
    assert.equal((await hangar(agents[0]!, 'unpin', 'echo')).code, 0);
    await until('no drift left', async () => ((await read(agents[0]!, 'nodes')).every((c) => c.counts.drift === 0) ? true : undefined), 5000);
    assert.deepEqual((await desired()).desired, []);
    assert.deepEqual(await versions(), [['d1', '3.0.0'], ['d2', '2.0.0'], ['d3', '3.0.0']]);
    const again = await hangar(agents[0]!, 'unpin', 'echo');
    assert.equal(again.stderr, 'hangar: echo has no desired version\n');
  });

  test('a name or a version no node knows is refused with a non-zero exit, and nothing is recorded', async () => {
    const typo = await hangar(agents[0]!, 'pin', 'nosuch', '9.9.9', '--on', 'all');
    assert.equal(typo.code, 3);
    assert.equal(typo.stderr, 'hangar: no node has nosuch installed or in a gallery (see hangar gallery --on all)\n');
    const version = await hangar(agents[0]!, 'pin', 'echo', '9.9.9', '--on', 'd1,d2');
    assert.equal(version.code, 3);
    assert.equal(version.stderr, 'hangar: no node (nodes d1, d2 asked) offers echo 9.9.9: their galleries and installs have 2.0.0, 3.0.0, 4.0.0\n');
    const upgrade = await hangar(agents[0]!, 'upgrade', 'nosuch', '--on', 'all');
    assert.equal(upgrade.code, 3);
    assert.equal(upgrade.stderr, 'hangar: no node has nosuch installed or in a gallery (see hangar gallery --on all)\n');
    const to = await hangar(agents[0]!, 'upgrade', 'echo', '--on', 'all', '--to', '9.9.9');
    assert.equal(to.code, 3);
    assert.match(to.stderr, /^hangar: no node offers echo 9\.9\.9: /);
    assert.deepEqual((await desired()).desired, []);
    assert.deepEqual(await read(agents[0]!, 'rollouts'), []);
    const refreshed = await hangar(agents[0]!, 'gallery', '--refresh', '--on', 'all');
    assert.equal(refreshed.code, 0, refreshed.stderr);
    assert.match(refreshed.stdout, /^NODE +ENTRIES +REFRESHED\nd1 +1 +now\nd2 +1 +now\nd3 +1 +now\n$/);
  });

  test('a pin from a key no node trusts, or forged into the bucket, is never acted on', async () => {
    const outsiderHome = join(root, 'outsider');
    const outsider = await startAgent(outsiderHome, galleries[0]!, ['--cluster', nats.url, '--name', 'outsider', '--cluster-role', 'viewer', '--heartbeat', String(HEARTBEAT_MS)]);
    agents.push(outsider);
    assert.equal((await hangar(outsider, 'pin', 'echo', '1.0.0', '--on', 'd1')).code, 0);
    const d1 = await idOf('d1');
    const refused = await until('d1 refuses the pin', async () => {
      const s = await said(d1);
      return s?.state === 'drifted' ? s : undefined;
    }, 10_000);
    const outsiderId = (await loadIdentity(outsiderHome)).id;
    assert.equal(refused.reason, `not acted on: key ${outsiderId} signed it, and this node does not trust it`);

    // Straight into the bucket: unsigned, and signed for another key than the one it is stored under.
    const nc = await connect({ servers: nats.url.replace('nats://', '') });
    try {
      const kv = await new Kvm(jetstream(nc)).open(BUCKETS.desired);
      const forged = { backend: 'echo', version: '1.0.0', on: 'all', installMissing: false, rollout: null };
      // One after the other: the bucket keeps one value per key, so a second write a moment after the first can
      // replace it before a viewer's watch has read it.
      const dropped = async (why: string) => (await read(agents[0]!, 'clusterStatus')).dropped.records[why] ?? 0;
      const droppedOnce = async (why: string, write: () => Promise<unknown>) => {
        const before = await dropped(why);
        await write();
        await until(`dropped by a viewer: ${why}`, async () => ((await dropped(why)) > before ? true : undefined), 5000);
      };
      await droppedOnce('unsigned', () => kv.put('echo', JSON.stringify(forged)));
      const home1 = await loadIdentity(join(root, 'home-1'));
      await droppedOnce('bad signature', () => kv.put('echo', seal(home1, 'desired', 'not-echo', { cluster: clusterOf(nc.info), after: 0 }, forged)));
    } finally {
      await nc.close();
    }
    await new Promise((r) => setTimeout(r, 1000));
    assert.deepEqual(await versions(), [['d1', '3.0.0'], ['d2', '2.0.0'], ['d3', '3.0.0']], 'no node moved');
  });

  test('a viewer-only host lists its own machine but never sweeps it into --on all', async () => {
    const viewer = agents[3]!;
    const own = (await read(viewer, 'nodes')).find((c) => c.self)!;
    assert.equal(own.viewerOnly, true);
    assert.match((await hangar(viewer, 'nodes')).stdout, /viewer only: never in --on all, a pin or a rollout/);
    // No node trusts this viewer yet: each column says so, and with none answered the listing exits 1.
    const listed = await hangar(viewer, 'ls', '--on', 'all', '--json');
    assert.equal(listed.code, 1, listed.stderr);
    const columns = JSON.parse(listed.stdout) as Array<Column & { error: string | null }>;
    assert.deepEqual(columns.map((c) => c.name), ['d1', 'd2', 'd3']);
    assert.ok(columns.every((c) => /^not trusted by node d\d: /.test(c.error ?? '')), listed.stdout);
  });

  test('with nats-server down the host keeps its own node online and usable; back on the same store, every pin is there', async () => {
    assert.equal((await hangar(agents[0]!, 'pin', 'echo', '3.0.0', '--on', 'd1')).code, 0);
    const port = Number(new URL(nats.url).port);
    await nats.stop({ keepStore: true });
    const cards = await until('the others unknown', async () => {
      const all = await read(agents[0]!, 'nodes');
      return all.filter((c) => c.status === 'unknown').length === 2 ? all : undefined;
    }, 3 * HEARTBEAT_MS + 2000);
    assert.deepEqual(cards.filter((c) => c.status === 'online').map((c) => c.name), ['d1']);
    const table = await hangar(agents[0]!, 'nodes');
    assert.match(table.stdout, /\nd2 +[0-9a-f]{16} +unknown \(no broker\) /);
    assert.match(table.stdout, /cluster connection lost: the NATS server at 127\.0\.0\.1:\d+ cannot be reached, retrying/);
    assert.match((await hangar(agents[0]!, 'desired')).stdout, /^cluster connection lost since \S+ \(.*\): shown as this host last read it\n/);
    assert.match((await hangar(agents[0]!, 'rollouts')).stdout, /^cluster connection lost since /);
    const call = await hangar(agents[0]!, 'ls', '--on', 'd2');
    assert.match(call.stderr, /^hangar: node d2 \([0-9a-f]{16}\) is unknown \(no broker\): this host lost its cluster connection\n$/);
    assert.equal((await hangar(agents[0]!, 'load', 'echo', 'm9')).code, 0, "the host's own node is usable");
    assert.equal((await hangar(agents[0]!, 'stop', 'm9')).code, 0);

    nats = await startNats([], port, nats.storeDir!);
    await until('every node online again', async () => ((await read(agents[0]!, 'nodes')).filter((c) => c.status === 'online').length === 3 ? true : undefined), 10_000);
    const kept = await until('the pins read back', async () => {
      const view = await desired();
      return view.available && view.desired.length === 1 ? view : undefined;
    }, 10_000);
    assert.deepEqual(kept.desired.map((d) => [d.backend, d.version, d.on]), [['echo', '3.0.0', `nodes:${await idOf('d1')}`]]);
    assert.ok(agents.every((a) => a.child.exitCode === null), 'no agent restarted');
  });
});
