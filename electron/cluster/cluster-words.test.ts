// What the cluster says to a new user, on a real nats-server with JetStream: two nodes and a viewer-only host. A
// cordoned node is shown skipped for the whole of a rollout that passes it by, a pin (and its refusal) names its
// nodes, `desired` lists an offline node that is not there yet with the time it was last heard, and an agent says on
// stderr when it loses the server and when it is back, once each; a node that shuts down just after an uncordon is
// not shown cordoned.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RolloutView } from '../../shared/types.ts';
import { connect } from '../agent/connect.ts';
import { hangar, json, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { trustingHomes } from './test-cluster.ts';
import { startNats, type NatsServer } from './test-nats.ts';

const HEARTBEAT_MS = 300;

describe('the cluster in its own words', () => {
  let root: string;
  let nats: NatsServer;
  const agents: Record<string, Agent> = {};
  const stderr: Record<string, string> = {};
  const galleries: string[] = [];

  const publish = async (version: string) => {
    const uri = await echoSource(root, version);
    for (const gallery of galleries) await writeGallery(gallery, [{ name: 'echo', uri, version }]);
  };
  const cards = () => read(agents.v1!, 'nodes');
  const versions = async () => (await json<Array<{ name: string; backends: Array<{ version: string }> | null }>>(agents.v1!, 'ls', '--on', 'all')).map((c) => [c.name, c.backends?.[0]?.version ?? '-']);

  before(async () => {
    root = await tempDir('cluster-words');
    nats = await startNats();
    const names = ['c1', 'c2', 'v1'];
    await trustingHomes(names.map((n) => join(root, `home-${n}`)));
    for (let i = 0; i < 2; i++) galleries[i] = join(root, `index-${i}.yaml`);
    await publish('1.0.0');
    for (const [i, name] of names.entries()) {
      const role = name === 'v1' ? ['--cluster-role', 'viewer'] : [];
      agents[name] = await startAgent(join(root, `home-${name}`), galleries[Math.min(i, 1)]!, ['--cluster', nats.url, '--name', name, '--ports', `266${i}0-266${i}9`, '--heartbeat', String(HEARTBEAT_MS), ...role]);
      stderr[name] = '';
      agents[name]!.child.stderr!.on('data', (chunk: Buffer) => (stderr[name] += chunk.toString()));
    }
    await until('two nodes online', async () => ((await cards()).filter((c) => c.status === 'online' && !c.viewerOnly).length === 2 ? true : undefined), 5000);
    const installed = await hangar(agents.v1!, 'install', 'echo', '--on', 'all');
    assert.equal(installed.code, 0, installed.stderr);
  });

  after(async () => {
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('installing what every node has says, for each node, that it was installed already, not done', async () => {
    const again = await hangar(agents.v1!, 'install', 'echo', '--on', 'all', '--json');
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual((JSON.parse(again.stdout) as Array<{ node: string; result: string }>).map((r) => [r.node, r.result]), [['c1', 'already installed'], ['c2', 'already installed']]);
  });

  test('a cordoned node shows skipped, cordoned, from the first record of a rollout to its end', async () => {
    assert.equal((await hangar(agents.c2!, 'cordon')).code, 0);
    await until('c2 seen cordoned', async () => ((await cards()).find((c) => c.name === 'c2')?.cordoned ? true : undefined), 3000);
    await publish('1.1.0');
    await until('1.1.0 offered on c1', async () => ((await json<Array<{ upgradable: boolean }>>(agents.v1!, 'ls', '--on', 'c1'))[0]?.upgradable ? true : undefined), 5000);
    const watcher = await connect({ node: agents.v1!.url, home: agents.v1!.home });
    const seen: RolloutView[] = [];
    watcher.onEvent((e) => e.type === 'rollout' && seen.push(e.rollout));
    try {
      const run = await hangar(agents.v1!, 'upgrade', 'echo', '--on', 'all');
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /^c2 +\S+ +skipped +- +- +cordoned$/m);
      assert.ok(seen.some((r) => r.state === 'running'), 'the rollout was seen running');
      const c2Steps = seen.map((r) => r.nodes.find((n) => n.name === 'c2')).map((n) => `${n?.step}: ${n?.reason}`);
      assert.deepEqual([...new Set(c2Steps)], ['skipped: cordoned']);
    } finally {
      watcher.close();
    }
    assert.equal((await hangar(agents.c2!, 'uncordon')).code, 0);
    await until('c2 converges to the rollout\'s version once uncordoned', async () => ((await versions()).find(([name]) => name === 'c2')?.[1] === '1.1.0' ? true : undefined), 10_000);
  });

  test('a pin on a node names it and the desired version it replaces; desired lists an offline node that is not there yet', async () => {
    const typo = await hangar(agents.v1!, 'pin', 'echo', '9.9.9', '--on', 'c1');
    assert.equal(typo.stderr, 'hangar: no node (node c1 asked) offers echo 9.9.9: their galleries and installs have 1.1.0\n');
    await publish('1.2.0');
    const pinned = await until('1.2.0 offered on c1', async () => {
      const tried = await hangar(agents.v1!, 'pin', 'echo', '1.2.0', '--on', 'c1');
      return tried.code === 0 ? tried : undefined;
    }, 5000);
    assert.equal(pinned.stdout, 'echo 1.2.0 is the desired version on node c1: nodes that differ converge by themselves (hangar desired, hangar ls --on all)\nit replaces echo 1.1.0 on every node: a backend has one desired version at a time\n');
    assert.match((await hangar(agents.v1!, 'desired')).stdout, /^echo +1\.2\.0 +node c1 +pin /m);
    await until('c1 at 1.2.0', async () => ((await versions()).find(([name]) => name === 'c1')?.[1] === '1.2.0' ? true : undefined), 10_000);

    // A node says what it runs once its last job has ended, a moment after `ls` shows the new version. c2 goes away
    // once both have said so: its last word is that the pin on c1 leaves it nothing to do, and c1 runs what it wants.
    const c2 = (await cards()).find((c) => c.name === 'c2')!.id;
    await until('c1 and c2 say they are done', async () => ((await read(agents.v1!, 'desired')).nodes.every((n) => n.node !== c2 && n.state === 'converged') ? true : undefined), 5000);
    agents.c2!.child.kill('SIGKILL');
    await until('c2 offline', async () => ((await cards()).find((c) => c.name === 'c2')?.status === 'offline' ? true : undefined), 10 * HEARTBEAT_MS + 3000);
    assert.equal((await hangar(agents.v1!, 'pin', 'echo', '1.2.0')).code, 0);
    const desired = await until('desired lists c2', async () => {
      const out = (await hangar(agents.v1!, 'desired')).stdout;
      return /^c2 /m.test(out) ? out : undefined;
    }, 15_000);
    // What c2 ran is not known once it said nothing of echo's latest pin; when it was last heard stays true.
    assert.match(desired, /^c2 +[0-9a-f]{16} +echo +1\.2\.0 +\? +not there yet +offline: no heartbeat since \d{4}-\d\d-\d\dT\S+Z: it converges when it is back$/m);
    assert.doesNotMatch(desired, /^c1 /m, 'c1 runs it');
  });

  test("an agent says on stderr when it loses the NATS server and when it is back, once each", async () => {
    const port = Number(new URL(nats.url).port);
    await nats.stop({ keepStore: true });
    await until('c1 says it lost the server', async () => (/cluster: lost the NATS server/.test(stderr.c1!) ? true : undefined), 10_000);
    nats = await startNats([], port, nats.storeDir!);
    await until('c1 says it is back', async () => (/cluster: back on the NATS server/.test(stderr.c1!) ? true : undefined), 15_000);
    await until('c1 online for v1 again', async () => ((await cards()).find((c) => c.name === 'c1')?.status === 'online' ? true : undefined), 10_000);
    const lines = stderr.c1!.split('\n').filter((line) => line.startsWith('hangar: cluster: lost') || line.startsWith('hangar: cluster: back'));
    assert.equal(lines.length, 2, lines.join('\n'));
    assert.match(lines[0]!, /^hangar: cluster: lost the NATS server at \S+Z: the NATS server at \S+ cannot be reached; retrying$/);
    assert.match(lines[1]!, /^hangar: cluster: back on the NATS server at \S+Z, after \d+\.\d s without it$/);
  });

  test('a node uncordoned right before it shuts down is shown offline, not cordoned', async () => {
    assert.equal((await hangar(agents.c1!, 'cordon')).code, 0);
    await until('c1 seen cordoned', async () => ((await cards()).find((c) => c.name === 'c1')?.cordoned ? true : undefined), 3000);
    assert.equal((await hangar(agents.c1!, 'uncordon')).code, 0);
    agents.c1!.child.kill('SIGTERM');
    const gone = await until('c1 shut down', async () => (await cards()).find((c) => c.name === 'c1' && c.status === 'offline'), 5000);
    assert.deepEqual([gone.reason, gone.cordoned], ['it shut down', false]);
  });
});
