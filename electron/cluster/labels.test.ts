// Labels, cordon and drain on a real cluster: `--on label:KEY=VALUE` picks the labelled nodes in a command and in a
// rollout, labels set from the command line are fixed and those in settings change at once, a cordoned node is passed
// by a rollout and does not converge until it is uncordoned, and a drain stops every process and leaves none running.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RolloutView } from '../../shared/types.ts';
import { isAlive } from '../core/supervisor/identity.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { answering, hangar, json, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { trustingHomes } from './test-cluster.ts';
import { startNats, type NatsServer } from './test-nats.ts';

const HEARTBEAT_MS = 300;
const LABELS: string[][] = [['--label', 'gpu=nvidia'], ['--label', 'gpu=nvidia', '--label', 'zone=b'], []];

describe('labels, cordon and drain', () => {
  let root: string;
  let nats: NatsServer;
  const agents: Agent[] = [];
  const galleries: string[] = [];

  const cards = () => read(agents[0]!, 'nodes');
  const card = async (name: string) => (await cards()).find((c) => c.name === name)!;
  const versions = async (on = 'all') => (await json<Array<{ name: string; backends: Array<{ version: string }> | null }>>(agents[0]!, 'ls', '--on', on)).map((c) => [c.name, c.backends?.[0]?.version ?? '-']);
  const publish = async (version: string) => {
    const uri = await echoSource(root, version);
    for (const gallery of galleries) await writeGallery(gallery, [{ name: 'echo', uri, version }]);
  };

  before(async () => {
    root = await tempDir('labels');
    nats = await startNats();
    await trustingHomes([0, 1, 2].map((i) => join(root, `home-${i}`)));
    for (let i = 0; i < 3; i++) galleries[i] = join(root, `index-${i}.yaml`);
    await publish('1.0.0');
    for (let i = 0; i < 3; i++) {
      const args = ['--cluster', nats.url, '--name', `l${i + 1}`, '--ports', `262${i}0-262${i}9`, '--heartbeat', String(HEARTBEAT_MS), ...LABELS[i]!];
      agents[i] = await startAgent(join(root, `home-${i}`), galleries[i]!, args);
    }
    await until('three nodes online', async () => ((await cards()).filter((c) => c.status === 'online').length === 3 ? true : undefined), 5000);
  });

  after(async () => {
    for (const agent of agents) agent?.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('--on label:KEY=VALUE picks the labelled nodes; settings change labels at once, and --label fixes them', async () => {
    assert.deepEqual((await cards()).map((c) => [c.name, c.labels]), [['l1', { gpu: 'nvidia' }], ['l2', { gpu: 'nvidia', zone: 'b' }], ['l3', {}]]);
    const installed = await hangar(agents[0]!, 'install', 'echo', '--on', 'label:gpu=nvidia', '--json');
    assert.equal(installed.code, 0, installed.stderr);
    assert.deepEqual((JSON.parse(installed.stdout) as Array<{ node: string }>).map((r) => r.node), ['l1', 'l2']);
    assert.deepEqual(await versions(), [['l1', '1.0.0'], ['l2', '1.0.0'], ['l3', '-']]);
    assert.deepEqual(await versions('label:zone=b'), [['l2', '1.0.0']]);
    const none = await hangar(agents[0]!, 'ls', '--on', 'label:gpu=amd');
    assert.equal(none.stderr, 'hangar: no node has the label gpu=amd (see hangar nodes)\n');

    assert.equal((await hangar(agents[0]!, 'settings', 'labels', 'gpu=amd,zone=c', '--on', 'l3')).code, 0);
    await until("l3's card carries its new labels", async () => ((await card('l3')).labels.gpu === 'amd' ? true : undefined), 3000);
    assert.deepEqual((await card('l3')).labels, { gpu: 'amd', zone: 'c' });
    const fixed = await hangar(agents[0]!, 'settings', 'labels', 'gpu=amd', '--on', 'l1');
    assert.equal(fixed.stderr, 'hangar: labels is fixed for this run by how the host was started\n');
    const bad = await hangar(agents[0]!, 'settings', 'labels', 'not a label');
    assert.equal(bad.code, 2);
  });

  test('a cordoned node is passed by a rollout on its label and does not converge until it is uncordoned', async () => {
    const cordoned = await hangar(agents[0]!, 'cordon', '--on', 'l2');
    assert.deepEqual([cordoned.code, cordoned.stdout], [0, 'cordoned l2: no rollout or convergence touches it until hangar uncordon --on l2\n']);
    await until('l2 shown cordoned', async () => ((await card('l2')).cordoned ? true : undefined), 3000);
    assert.match((await hangar(agents[0]!, 'nodes')).stdout, /\nl2 .* cordoned\n/);
    await publish('1.1.0');
    await until('1.1.0 offered', async () => {
      const columns = await json<Array<{ name: string; backends: Array<{ upgradable: boolean }> | null }>>(agents[0]!, 'ls', '--on', 'label:gpu=nvidia');
      return columns.every((c) => c.backends?.[0]?.upgradable) ? true : undefined;
    }, 5000);
    const run = await hangar(agents[0]!, 'upgrade', 'echo', '--on', 'label:gpu=nvidia', '--json');
    assert.equal(run.code, 0, run.stderr);
    const rollout = JSON.parse(run.stdout) as RolloutView;
    assert.deepEqual([rollout.on, rollout.version], ['label:gpu=nvidia', '1.1.0']);
    assert.deepEqual(rollout.nodes.map((n) => [n.name, n.step, n.reason]), [['l1', 'upgraded', null], ['l2', 'skipped', 'cordoned']]);

    const l2 = (await card('l2')).id;
    const waiting = await until('l2 says it is cordoned', async () => {
      const said = (await read(agents[0]!, 'desired')).nodes.find((n) => n.node === l2);
      return said?.state === 'drifted' ? said : undefined;
    }, 5000);
    assert.equal(waiting.reason, 'cordoned: no rollout or convergence touches it');
    await new Promise((r) => setTimeout(r, 1000));
    assert.deepEqual(await versions(), [['l1', '1.1.0'], ['l2', '1.0.0'], ['l3', '-']], 'l2 stayed, and l3 without echo got none');

    const uncordoned = await hangar(agents[0]!, 'uncordon', '--on', 'l2');
    assert.deepEqual([uncordoned.code, uncordoned.stdout], [0, 'uncordoned l2: rollouts and convergence touch it again\n']);
    await until('l2 converges once uncordoned', async () => ((await versions())[1]![1] === '1.1.0' ? true : undefined), 10_000);
    // Its card comes on its own path (read again a moment after the change), which a quick install can outrun.
    await until('l2 shown uncordoned', async () => ((await card('l2')).cordoned ? undefined : true), 3000);
  });

  test('drain lists the processes, cordons, stops them all (Free, then stop), and leaves nothing running', async () => {
    const pids = [];
    for (const model of ['m1', 'm2']) pids.push((await json<{ pid: number }>(agents[0]!, 'load', 'echo', model, '--on', 'l1')).pid);
    const drained = await hangar(agents[0]!, 'drain', '--on', 'l1', '--yes');
    assert.equal(drained.code, 0, drained.stderr);
    assert.match(drained.stderr, new RegExp(`^will stop m1 \\(echo, pid ${pids[0]}, ready\\)\\nwill stop m2 \\(echo, pid ${pids[1]}, ready\\)\\n$`));
    assert.equal(drained.stdout, 'drained: cordoned, stopped m1, m2\n');
    assert.deepEqual(await json(agents[0]!, 'ps', '--on', 'l1'), []);
    for (const pid of pids) assert.equal(isAlive(pid), false, `pid ${pid} is gone`);
    // The card says cordoned, then, a card later, that the stops left nothing running.
    await until('l1 shown cordoned with nothing running', async () => {
      const shown = await card('l1');
      return shown.cordoned && shown.counts.processes === 0 ? true : undefined;
    }, 3000);
    const declined = await answering(agents[0]!, 'n\n', 'drain', '--on', 'l2');
    assert.match(declined.stderr, /^cordon this node \(it runs no process\)\? \[y\/N\] hangar: not drained\n$/);
    assert.equal((await card('l2')).cordoned, false, 'a drain not agreed to changes nothing');
  });
});
