// Rolling upgrades beyond one node at a time, on a real nats-server with three real agents: two nodes upgraded at
// once with --max-parallel 2, a node that is shut down passed by (and said so) while the others are upgraded, and a
// broker outage in the middle of a step waited out.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import type { RolloutView } from '../../../shared/types.ts';
import { echoSource, tempDir, writeGallery } from '../../core/testing/fixtures.ts';
import { hangar, json, read, startAgent, startCli, until, type Agent } from '../../agent/test-agent.ts';
import { trustingHomes } from '../../cluster/test-cluster.ts';
import { startNats, type NatsServer } from '../../cluster/test-nats.ts';

const HEARTBEAT_MS = 300;

describe('rolling upgrades: in parallel, and past a node that is away', () => {
  let root: string;
  let nats: NatsServer;
  const agents: Agent[] = [];
  const galleries: string[] = [];


  async function publish(version: string): Promise<void> {
    const source = await echoSource(root, version);
    for (const gallery of galleries) await writeGallery(gallery, [{ name: 'echo', uri: source, version }]);
  }

  async function upgradableEverywhere(online: number): Promise<void> {
    await until('echo upgradable on every online node', async () => {
      const columns = await json<Array<{ backends: Array<{ upgradable: boolean }> | null }>>(agents[0]!, 'ls', '--on', 'all');
      const known = columns.filter((c) => c.backends !== null);
      return known.length === online && known.every((c) => c.backends?.[0]?.upgradable) ? true : undefined;
    }, 5000);
  }

  before(async () => {
    root = await tempDir('rollout-cases');
    nats = await startNats();
    const v1 = await echoSource(root, '1.0.0');
    await trustingHomes([0, 1, 2].map((i) => join(root, `home-${i}`)));
    for (let i = 0; i < 3; i++) {
      galleries[i] = join(root, `index-${i}.yaml`);
      await writeGallery(galleries[i]!, [{ name: 'echo', uri: v1, version: '1.0.0' }]);
      const args = ['--cluster', nats.url, '--name', `p${i + 1}`, '--ports', `22${i + 1}00-22${i + 1}99`, '--heartbeat', String(HEARTBEAT_MS)];
      agents[i] = await startAgent(join(root, `home-${i}`), galleries[i]!, args);
    }
    await until('three nodes online', async () => ((await read(agents[0]!, 'nodes')).filter((c) => c.status === 'online').length === 3 ? true : undefined), 3000);
    const installed = await hangar(agents[0]!, 'install', 'echo', '--on', 'all');
    assert.equal(installed.code, 0, installed.stderr);
  });

  after(async () => {
    for (const agent of agents) agent?.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('--max-parallel 2 upgrades two nodes at once, then the third', async () => {
    await publish('1.1.0');
    await upgradableEverywhere(3);
    const run = await hangar(agents[0]!, 'upgrade', 'echo', '--on', 'all', '--max-parallel', '2', '--json');
    assert.equal(run.code, 0, run.stderr);
    const rollout = JSON.parse(run.stdout) as RolloutView;
    assert.equal(rollout.maxParallel, 2);
    assert.deepEqual(rollout.nodes.map((n) => [n.name, n.step, n.to]), [['p1', 'upgraded', '1.1.0'], ['p2', 'upgraded', '1.1.0'], ['p3', 'upgraded', '1.1.0']]);
    // The first two started before either was done; the third only once one of them was.
    const lines = run.stderr.split('\n');
    const at = (pattern: RegExp) => lines.findIndex((l) => pattern.test(l));
    const firstDone = Math.min(at(/p1 \(\w+\): upgraded/), at(/p2 \(\w+\): upgraded/));
    assert.ok(at(/p1 \(\w+\): upgrading/) < firstDone && at(/p2 \(\w+\): upgrading/) < firstDone, run.stderr);
    assert.ok(at(/p3 \(\w+\): upgrading/) > firstDone, run.stderr);
  });

  test('a node that is shut down is passed by and named; the others are upgraded', async () => {
    const away = agents[1]!;
    away.child.kill('SIGTERM');
    await once(away.child, 'exit');
    await until('p2 shown offline', async () => (await read(agents[0]!, 'nodes')).find((c) => c.name === 'p2' && c.status === 'offline'), 3000);
    await publish('1.2.0');
    await upgradableEverywhere(2);
    const run = await hangar(agents[0]!, 'upgrade', 'echo', '--on', 'all', '--json');
    const rollout = JSON.parse(run.stdout) as RolloutView;
    assert.deepEqual(rollout.nodes.map((n) => [n.name, n.step]), [['p1', 'upgraded'], ['p2', 'skipped'], ['p3', 'upgraded']]);
    assert.match(rollout.nodes[1]!.reason ?? '', /^offline: /);
  });

  test('a broker outage during a step is waited out: the step ends as the node ended it, and the rollout goes on', async () => {
    // A build that takes 3 s to answer Health: its smoke start is under way on p3 when the broker goes.
    const slow = await echoSource(root, '1.3.0');
    const runSh = join(slow, 'run.sh');
    await writeFile(runSh, (await readFile(runSh, 'utf8')).replace(/^exec /m, 'sleep 3\nexec '));
    for (const gallery of galleries) await writeGallery(gallery, [{ name: 'echo', uri: slow, version: '1.3.0' }]);
    await upgradableEverywhere(2);
    const run = hangar(agents[0]!, 'upgrade', 'echo', '--on', 'all', '--json');
    await until('p3 upgrading', async () => {
      const [rollout] = await read(agents[0]!, 'rollouts');
      return rollout?.version === '1.3.0' && rollout.nodes.find((n) => n.name === 'p3')?.step === 'upgrading' ? true : undefined;
    }, 20_000);
    const port = Number(new URL(nats.url).port);
    await nats.stop({ keepStore: true });
    // The broker stays away until p3 has ended its step on its own (asked of p3 itself, not over NATS).
    await until('p3 ended its upgrade with the broker away', async () => {
      const jobs = await read(agents[2]!, 'jobs');
      const upgrade = jobs.filter((j) => j.kind === 'upgrade' && j.backend === 'echo').sort((a, b) => b.startedAt.localeCompare(a.startedAt))[0];
      return upgrade?.finishedAt ? true : undefined;
    }, 20_000);
    assert.equal((await read(agents[0]!, 'clusterStatus')).link.connected, false, 'the coordinator saw the broker go');
    nats = await startNats([], port, nats.storeDir!);
    const { code, stdout, stderr } = await run;
    assert.equal(code, 0, stderr);
    const rollout = JSON.parse(stdout) as RolloutView;
    assert.equal(rollout.state, 'done', `${stderr} ${JSON.stringify(rollout.interrupted)}`);
    assert.deepEqual(rollout.nodes.map((n) => [n.name, n.step]), [['p1', 'upgraded'], ['p2', 'skipped'], ['p3', 'upgraded']]);
    const p3 = (await json<Array<{ name: string; backends: Array<{ version: string }> | null }>>(agents[0]!, 'ls', '--on', 'all')).find((c) => c.name === 'p3');
    assert.equal(p3?.backends?.[0]?.version, '1.3.0');
  });

  test('hangar wait --on a node waits out a broker outage, and ends once the link is back, not a call timeout later', async () => {
    // A build that takes 3 s to answer Health, upgraded on p3 by p3 itself; p1 follows the job.
    const slow = await echoSource(root, '1.5.0');
    const runSh = join(slow, 'run.sh');
    await writeFile(runSh, (await readFile(runSh, 'utf8')).replace(/^exec /m, 'sleep 3\nexec '));
    for (const gallery of galleries) await writeGallery(gallery, [{ name: 'echo', uri: slow, version: '1.5.0' }]);
    await until('p3 offers 1.5.0', async () => ((await json<Array<{ upgradable: boolean }>>(agents[2]!, 'ls'))[0]?.upgradable ? true : undefined), 5000);
    const upgrading = hangar(agents[2]!, 'upgrade', 'echo');
    const job = await until('the upgrade under way on p3', async () => (await read(agents[2]!, 'jobs')).find((j) => j.kind === 'upgrade' && j.state === 'running'), 10_000);
    const waiting = startCli(agents[0]!, 'wait', job.id, '--on', 'p3');
    // The broker goes once the wait has the job (it shows the job's line) and follows it.
    await until('the wait following the job', async () => (/upgrade echo/.test(waiting.stderr()) ? true : undefined), 10_000);
    const port = Number(new URL(nats.url).port);
    await nats.stop({ keepStore: true });
    // The job's end is told while no one can hear it.
    await until('p3 ended its upgrade with the broker away', async () => (await read(agents[2]!, 'jobs')).find((j) => j.id === job.id && j.finishedAt) ?? undefined, 20_000);
    nats = await startNats([], port, nats.storeDir!);
    const back = performance.now();
    const waited = await waiting.exited;
    const afterMs = performance.now() - back;
    assert.equal(waited.code, 0, waiting.stderr());
    assert.ok(afterMs < 4000, `the wait ended ${Math.round(afterMs)} ms after the broker came back (a call timeout is 10 s)`);
    assert.equal((await upgrading).code, 0);
  });

  test('hangar wait --on a node that dies ends once the cluster says it is offline, not at the next poll', async () => {
    const slow = await echoSource(root, '1.6.0');
    const runSh = join(slow, 'run.sh');
    await writeFile(runSh, (await readFile(runSh, 'utf8')).replace(/^exec /m, 'sleep 30\nexec '));
    await writeGallery(galleries[2]!, [{ name: 'echo', uri: slow, version: '1.6.0' }]);
    await until('p3 offers 1.6.0', async () => ((await json<Array<{ upgradable: boolean }>>(agents[2]!, 'ls'))[0]?.upgradable ? true : undefined), 5000);
    void hangar(agents[2]!, 'upgrade', 'echo');
    const job = await until('the upgrade under way on p3', async () => (await read(agents[2]!, 'jobs')).find((j) => j.kind === 'upgrade' && j.state === 'running'), 10_000);
    const waiting = startCli(agents[0]!, 'wait', job.id, '--on', 'p3');
    await until('the wait following the job', async () => (/upgrade echo/.test(waiting.stderr()) ? true : undefined), 10_000);
    const killed = performance.now();
    agents[2]!.child.kill('SIGKILL');
    const waited = await waiting.exited;
    const afterMs = performance.now() - killed;
    assert.notEqual(waited.code, 0);
    assert.match(waiting.stderr(), /node p3 .* is not connected to the cluster; the cluster says it is offline \(no heartbeat since/);
    assert.ok(afterMs < 5000, `the wait ended ${Math.round(afterMs)} ms after p3 died (3 heartbeats are ${3 * HEARTBEAT_MS} ms; a poll is 10 s away)`);
  });
});
