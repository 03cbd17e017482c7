// A rollout's rollback covers the nodes its desired version moved after it passed them by, on a real nats-server
// with JetStream and two real agents: a node cordoned while the rollout ran, uncordoned after, converges to the
// rollout's version by itself; rolling the rollout back takes it back too, and says why it is in the rollback. A node
// away during a rollback that comes back to the version before by itself (the desired version the rollback gave back)
// is not swapped again by the next rollback, which would take it to the rollout's version.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RolloutView } from '../../../shared/types.ts';
import { echoSource, tempDir, writeGallery } from '../../core/testing/fixtures.ts';
import { hangar, json, read, startAgent, until, type Agent } from '../../agent/test-agent.ts';
import { trustingHomes } from '../../cluster/test-cluster.ts';
import { startNats, type NatsServer } from '../../cluster/test-nats.ts';

const HEARTBEAT_MS = 300;

describe('rolling back a rollout a node converged to after it was passed by', () => {
  let root: string;
  let nats: NatsServer;
  const agents: Record<string, Agent> = {};
  const galleries: string[] = [];

  const publish = async (version: string) => {
    const uri = await echoSource(root, version);
    for (const gallery of galleries) await writeGallery(gallery, [{ name: 'echo', uri, version }]);
  };
  const versions = async () => (await json<Array<{ name: string; backends: Array<{ version: string }> | null }>>(agents.b1!, 'ls', '--on', 'all')).map((c) => [c.name, c.backends?.[0]?.version ?? '-']);
  const versionOf = async (name: string) => (await versions()).find(([n]) => n === name)?.[1];
  const start = async (name: string, i: number) => {
    agents[name] = await startAgent(join(root, `home-${name}`), galleries[i]!, ['--cluster', nats.url, '--name', name, '--ports', `265${i}0-265${i}9`, '--heartbeat', String(HEARTBEAT_MS)]);
  };
  const statusOf = async (name: string) => (await read(agents.b1!, 'nodes')).find((c) => c.name === name)?.status;

  before(async () => {
    root = await tempDir('rollback-later');
    nats = await startNats();
    const names = ['b1', 'b2'];
    await trustingHomes(names.map((n) => join(root, `home-${n}`)));
    for (let i = 0; i < names.length; i++) galleries[i] = join(root, `index-${i}.yaml`);
    await publish('1.0.0');
    for (const [i, name] of names.entries()) await start(name, i);
    await until('two nodes online', async () => ((await read(agents.b1!, 'nodes')).filter((c) => c.status === 'online').length === 2 ? true : undefined), 5000);
    const installed = await hangar(agents.b1!, 'install', 'echo', '--on', 'all');
    assert.equal(installed.code, 0, installed.stderr);
  });

  after(async () => {
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('the node uncordoned after the rollout, at its version by itself, is rolled back with the others', async () => {
    assert.equal((await hangar(agents.b2!, 'cordon')).code, 0);
    await until('b2 seen cordoned', async () => ((await read(agents.b1!, 'nodes')).find((c) => c.name === 'b2')?.cordoned ? true : undefined), 3000);
    await publish('1.1.0');
    await until('1.1.0 offered on b1', async () => ((await json<Array<{ upgradable: boolean }>>(agents.b1!, 'ls'))[0]?.upgradable ? true : undefined), 5000);
    const run = await hangar(agents.b1!, 'upgrade', 'echo', '--on', 'all', '--json');
    assert.equal(run.code, 0, run.stderr);
    const rollout = JSON.parse(run.stdout) as RolloutView;
    assert.deepEqual(rollout.nodes.map((n) => [n.name, n.step]), [['b1', 'upgraded'], ['b2', 'skipped']]);

    assert.equal((await hangar(agents.b2!, 'uncordon')).code, 0);
    await until('b2 converges to the rollout\'s version once uncordoned', async () => ((await versionOf('b2')) === '1.1.0' ? true : undefined), 15_000);
    const b2 = rollout.nodes[1]!.id;
    await until('b2 says it converged', async () => {
      const said = (await read(agents.b1!, 'desired')).nodes.find((n) => n.node === b2 && n.backend === 'echo');
      return said?.state === 'converged' && said.version === '1.1.0' ? true : undefined;
    }, 5000);

    const back = await hangar(agents.b1!, 'rollback', '--rollout', rollout.id);
    assert.equal(back.code, 0, back.stderr);
    assert.match(back.stdout, /^rollout \S+: echo → 1\.1\.0 on every node, rolled-back, /);
    assert.match(back.stdout, /^b1 +[0-9a-f]{16} +rolled-back +1\.0\.0 +1\.1\.0 *$/m);
    assert.match(back.stdout, /^b2 +[0-9a-f]{16} +rolled-back +1\.0\.0 +1\.1\.0 +converged to 1\.1\.0 by itself after the rollout passed it by$/m);
    assert.deepEqual(await versions(), [['b1', '1.0.0'], ['b2', '1.0.0']]);
    // Nothing brings it back to the rolled-back version afterwards.
    await new Promise((resolve) => setTimeout(resolve, 5 * HEARTBEAT_MS));
    assert.equal(await versionOf('b2'), '1.0.0');
  });

  test('a node back on the version before by itself, after a rollback that could not reach it, is not swapped again', async () => {
    assert.equal((await hangar(agents.b1!, 'pin', 'echo', '1.0.0')).code, 0);
    await publish('1.2.0');
    await until('1.2.0 offered on b1', async () => ((await json<Array<{ upgradable: boolean }>>(agents.b1!, 'ls'))[0]?.upgradable ? true : undefined), 5000);
    const run = await hangar(agents.b1!, 'upgrade', 'echo', '--on', 'all', '--json');
    assert.equal(run.code, 0, run.stderr);
    const rollout = JSON.parse(run.stdout) as RolloutView;
    assert.deepEqual(await versions(), [['b1', '1.2.0'], ['b2', '1.2.0']]);

    agents.b2!.child.kill('SIGTERM');
    await once(agents.b2!.child, 'exit');
    await until('b2 seen offline', async () => ((await statusOf('b2')) === 'offline' ? true : undefined), 5000);
    await publish('1.0.0');
    const away = await hangar(agents.b1!, 'rollback', '--rollout', rollout.id);
    assert.equal(away.code, 1, away.stdout);
    assert.match(away.stdout, /^b2 +[0-9a-f]{16} +upgraded +1\.0\.0 +1\.2\.0 +rollback failed: node b2 \([0-9a-f]{16}\) is not connected to the cluster/m);

    // Back, it follows the pin the rollback gave back.
    await start('b2', 1);
    await until('b2 back on 1.0.0 by itself', async () => ((await versionOf('b2')) === '1.0.0' ? true : undefined), 15_000);
    const rollbacks = async () => (await json<Array<{ kind: string }>>(agents.b2!, 'jobs')).filter((j) => j.kind === 'rollback').length;
    const before = await rollbacks();
    const again = await hangar(agents.b1!, 'rollback', '--rollout', rollout.id);
    assert.equal(again.code, 0, again.stdout + again.stderr);
    assert.match(again.stdout, /^rollout \S+: echo → 1\.2\.0 on every node, rolled-back, /);
    assert.match(again.stdout, /^b2 +[0-9a-f]{16} +rolled-back +1\.0\.0 +1\.2\.0 +it ran 1\.0\.0 already$/m);
    assert.equal(await rollbacks(), before, 'no rollback swapped b2 to the build before its own');
    assert.equal(await versionOf('b2'), '1.0.0');
  });
});
