// Rollouts that outlive their coordinator, on a real nats-server with JetStream: three nodes and two viewer-only
// coordinators. Killed after its first node, a rollout is seen interrupted by every other viewer within 3 heartbeats,
// its untouched nodes wait, one viewer resumes it (two at once: only one wins) and a later resume is refused; an
// interrupted rollout rolls back what it upgraded, waiting for a step still in flight; and every agent restarted, every
// viewer still lists them.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RolloutView } from '../../../shared/types.ts';
import type { WireClient } from '../../../shared/wire-client.ts';
import { connect } from '../../agent/connect.ts';
import { echoSource, tempDir, writeGallery } from '../../core/testing/fixtures.ts';
import { hangar, json, read, startAgent, startCli, until, type Agent } from '../../agent/test-agent.ts';
import { loadIdentity } from '../../cluster/node-key.ts';
import { trustingHomes } from '../../cluster/test-cluster.ts';
import { addTrust } from '../../cluster/trust.ts';
import { startNats, type NatsServer } from '../../cluster/test-nats.ts';

const HEARTBEAT_MS = 300;
const NODES = ['r1', 'r2', 'r3'];

describe('rollouts that outlive their coordinator', () => {
  let root: string;
  let nats: NatsServer;
  const agents: Record<string, Agent> = {};
  const galleries: string[] = [];

  const homeOf = (name: string) => join(root, `home-${name}`);
  const start = async (name: string, i: number, extra: string[] = []) => {
    const gallery = galleries[Math.min(i, 2)]!;
    agents[name] = await startAgent(homeOf(name), gallery, ['--cluster', nats.url, '--name', name, '--ports', `261${i}0-261${i}9`, '--heartbeat', String(HEARTBEAT_MS), ...extra]);
    return agents[name]!;
  };
  const publish = async (version: string) => {
    const uri = await echoSource(root, version);
    for (const gallery of galleries) await writeGallery(gallery, [{ name: 'echo', uri, version }]);
  };
  const versions = async (via: Agent) => (await json<Array<{ name: string; backends: Array<{ version: string }> | null }>>(via, 'ls', '--on', 'all')).map((c) => [c.name, c.backends?.[0]?.version]);
  const rolloutOf = async (via: Agent, id: string) => (await read(via, 'rollouts')).find((r) => r.id === id);

  /** Waits until every node's gallery, as `via` sees it, offers `version` as an upgrade. */
  const offeredEverywhere = (via: Agent, version: string) =>
    until(`${version} offered everywhere`, async () => {
      const columns = (await json<Array<{ name: string; backends: Array<{ upgradable: boolean }> }>>(via, 'ls', '--on', 'all')).filter((c) => NODES.includes(c.name));
      return columns.length === 3 && columns.every((c) => c.backends?.[0]?.upgradable) ? true : undefined;
    }, 5000);

  /** Starts a rollout on `coordinator` and SIGKILLs it as soon as its first node is upgraded; returns the rollout as last seen. */
  async function killAfterFirstNode(coordinator: Agent, watcher: WireClient): Promise<RolloutView & { killedAt: number }> {
    const killed = new Promise<RolloutView & { killedAt: number }>((resolve) => {
      const off = watcher.onEvent((e) => {
        if (e.type === 'rollout' && e.rollout.state === 'running' && e.rollout.nodes[0]?.step === 'upgraded') {
          coordinator.child.kill('SIGKILL');
          off();
          resolve({ ...e.rollout, killedAt: Date.now() });
        }
      });
    });
    const started = await hangar(coordinator, 'upgrade', 'echo', '--on', 'all');
    assert.notEqual(started.code, 0, 'the coordinator died during its rollout');
    assert.match(started.stderr, /hangar: the agent closed its connection \(\d+\) while it ran rollout \S+: another viewer can see it interrupted and resume or roll it back \(hangar rollouts\)\n$/);
    return killed;
  }

  before(async () => {
    root = await tempDir('rollout-resume');
    nats = await startNats();
    for (let i = 0; i < 3; i++) galleries[i] = join(root, `index-${i}.yaml`);
    await publish('1.0.0');
    await trustingHomes([...NODES, 'v1', 'v2', 'v3'].map(homeOf));
    for (const [i, name] of NODES.entries()) await start(name, i);
    await until('three nodes online', async () => ((await read(agents.r1!, 'nodes')).filter((c) => c.status === 'online').length === 3 ? true : undefined), 5000);
    assert.equal((await hangar(agents.r1!, 'install', 'echo', '--on', 'all')).code, 0);
    for (const name of NODES) assert.equal((await hangar(agents[name]!, 'load', 'echo', 'm1')).code, 0);
  });

  after(async () => {
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('killed after node 1 of 3: interrupted within 3 heartbeats, its other nodes wait, one resume wins and finishes it, a second is refused', async () => {
    const v1 = await start('v1', 3, ['--cluster-role', 'viewer']);
    const watcher = await connect({ node: agents.r1!.url, home: agents.r1!.home });
    try {
      await publish('1.1.0');
      await offeredEverywhere(v1, '1.1.0');
      const { id, killedAt } = await killAfterFirstNode(v1, watcher);
      const interrupted = await until('r1 sees it interrupted', async () => {
        const r = await rolloutOf(agents.r1!, id);
        return r?.state === 'interrupted' ? r : undefined;
      }, 3 * HEARTBEAT_MS + 2000);
      console.log(`interrupted seen ${Date.now() - killedAt} ms after the coordinator was killed`);
      assert.equal(interrupted.interrupted?.while, 'running');
      // A time, which stays true however late it is read, not an age frozen into the record.
      const heard = /^its coordinator v1 \([0-9a-f]{16}\) stopped updating it after (\S+)$/.exec(interrupted.interrupted?.reason ?? '');
      assert.ok(heard, interrupted.interrupted?.reason);
      const heardAt = Date.parse(heard[1]!);
      assert.ok(heardAt > killedAt - 10_000 && heardAt < Date.parse(interrupted.interrupted!.at), `${heard[1]} is when r1 last heard the record`);
      assert.deepEqual(interrupted.coordinator.name, 'v1');
      assert.equal(interrupted.nodes[0]!.step, 'upgraded');
      assert.equal(interrupted.nodes[2]!.step, 'pending', 'the last step it knew');
      const human = await hangar(agents.r2!, 'rollouts');
      assert.match(human.stdout, new RegExp(`rollout ${id}: echo → 1\\.1\\.0 on every node, interrupted, .* by v1\\ninterrupted while running: its coordinator v1`));

      // Nothing converges under an interrupted rollout: r3 stays where it was.
      await new Promise((r) => setTimeout(r, 1500));
      assert.deepEqual((await versions(agents.r1!))[2], ['r3', '1.0.0']);

      const [a, b] = await Promise.all([hangar(agents.r1!, 'resume', '--rollout', id, '--json'), hangar(agents.r2!, 'resume', '--rollout', id, '--json')]);
      const winner = [a, b].filter((r) => r.code === 0);
      assert.equal(winner.length, 1, `exactly one resume wins:\n${a.stderr}\n${b.stderr}`);
      const loser = a.code === 0 ? b : a;
      assert.match(loser.stderr, /^hangar: (another viewer took rollout \S+ over first|rollout \S+ is running, run by r[12] \([0-9a-f]{16}\): it is not interrupted)\n$/);
      const done = JSON.parse(winner[0]!.stdout) as RolloutView;
      assert.equal(done.state, 'done');
      assert.deepEqual(done.nodes.map((n) => [n.name, n.step]), [['r1', 'upgraded'], ['r2', 'upgraded'], ['r3', 'upgraded']]);
      assert.deepEqual(await versions(agents.r1!), [['r1', '1.1.0'], ['r2', '1.1.0'], ['r3', '1.1.0']]);
      for (const name of NODES) {
        const [m1] = await json<Array<{ model: string; state: string; cwd: string }>>(agents[name]!, 'ps');
        assert.deepEqual([m1?.model, m1?.state, m1?.cwd], ['m1', 'ready', 'ok'], `${name}'s model is back`);
      }
      const third = await hangar(agents.r3!, 'resume', '--rollout', id);
      assert.equal(third.stderr, `hangar: rollout ${id} is done: there is nothing to resume\n`);
    } finally {
      watcher.close();
    }
  });

  test('an interrupted rollout rolls back what it upgraded, and gives the desired version back', async () => {
    const v2 = await start('v2', 4, ['--cluster-role', 'viewer']);
    const watcher = await connect({ node: agents.r2!.url, home: agents.r2!.home });
    try {
      await publish('1.2.0');
      await offeredEverywhere(v2, '1.2.0');
      const { id } = await killAfterFirstNode(v2, watcher);
      await until('interrupted', async () => ((await rolloutOf(agents.r2!, id))?.state === 'interrupted' ? true : undefined), 3 * HEARTBEAT_MS + 2000);
      const rolledBack = await hangar(agents.r2!, 'rollback', '--rollout', id, '--json');
      assert.equal(rolledBack.code, 0, rolledBack.stderr);
      const final = JSON.parse(rolledBack.stdout) as RolloutView;
      assert.equal(final.state, 'rolled-back');
      assert.equal(final.nodes[0]!.step, 'rolled-back');
      assert.deepEqual([final.nodes[2]!.step, final.nodes[2]!.reason], ['skipped', 'rolled back before it reached this node'], 'no node is left pending');
      await until('every node at 1.1.0 again', async () => {
        const now = await versions(agents.r2!);
        return now.every(([, v]) => v === '1.1.0') ? true : undefined;
      }, 10_000);
      const desired = await read(agents.r2!, 'desired');
      assert.deepEqual(desired.desired.map((d) => [d.backend, d.version]), [['echo', '1.1.0']], 'the version the first rollout recorded is back');
    } finally {
      watcher.close();
    }
  });

  test('a rollback waits for a step still in flight when its coordinator died, and proves every node back', async () => {
    const v3 = await start('v3', 6, ['--cluster-role', 'viewer']);
    const watcher = await connect({ node: agents.r3!.url, home: agents.r3!.home });
    try {
      // A build whose start takes 3 s: r2's step is still under way when its coordinator dies.
      const slow = await echoSource(root, '1.3.0');
      await writeFile(join(slow, 'run.sh'), (await readFile(join(slow, 'run.sh'), 'utf8')).replace(/^exec /m, 'sleep 3\nexec '));
      for (const gallery of galleries) await writeGallery(gallery, [{ name: 'echo', uri: slow, version: '1.3.0' }]);
      await offeredEverywhere(v3, '1.3.0');
      const killed = new Promise<string>((resolve) => {
        const off = watcher.onEvent((e) => {
          if (e.type === 'rollout' && e.rollout.state === 'running' && e.rollout.nodes[1]?.step === 'upgrading') {
            v3.child.kill('SIGKILL');
            off();
            resolve(e.rollout.id);
          }
        });
      });
      // A rollout refused or ended before r2's step fails here, rather than waiting for a kill that never comes.
      const upgrade = hangar(v3, 'upgrade', 'echo', '--on', 'all').then((ran) => assert.fail(`the rollout ended before r2's step began: ${ran.stderr}`));
      const id = await Promise.race([killed, upgrade]);
      await until('interrupted', async () => ((await rolloutOf(agents.r3!, id))?.state === 'interrupted' ? true : undefined), 3 * HEARTBEAT_MS + 2000);
      const rolledBack = await hangar(agents.r3!, 'rollback', '--rollout', id, '--json');
      assert.equal(rolledBack.code, 0, rolledBack.stderr);
      const final = JSON.parse(rolledBack.stdout) as RolloutView;
      assert.equal(final.state, 'rolled-back');
      assert.equal(final.nodes[0]!.step, 'rolled-back');
      assert.ok(['rolled-back', 'skipped'].includes(final.nodes[1]!.step), JSON.stringify(final.nodes[1]));
      // Proven when the command ends, and still so once the step that was in flight could have finished.
      assert.deepEqual(await versions(agents.r3!), [['r1', '1.1.0'], ['r2', '1.1.0'], ['r3', '1.1.0']]);
      await new Promise((r) => setTimeout(r, 4000));
      assert.deepEqual(await versions(agents.r3!), [['r1', '1.1.0'], ['r2', '1.1.0'], ['r3', '1.1.0']]);
    } finally {
      watcher.close();
    }
  });

  test('every agent restarted, every viewer still lists the rollouts', async () => {
    const ids = (await read(agents.r1!, 'rollouts')).map((r) => r.id);
    assert.equal(ids.length, 3);
    for (const [i, name] of NODES.entries()) {
      agents[name]!.child.kill('SIGTERM');
      await once(agents[name]!.child, 'exit');
      await start(name, i);
    }
    for (const name of NODES) assert.deepEqual((await read(agents[name]!, 'rollouts')).map((r) => r.id), ids, `${name} lists them`);
  });

  test('rollouts an earlier Hangar kept in its home move into the cluster when it joins, and the file is set aside', async () => {
    const home = homeOf('old-host');
    const old = {
      id: '3f1c2a9e-0d4b-4c1e-9a7f-1b2c3d4e5f60', backend: 'echo', maxParallel: 1, state: 'done', startedAt: '2025-01-01T00:00:00.000Z', finishedAt: '2025-01-01T00:01:00.000Z',
      nodes: [{ id: '0123456789abcdef', name: 'gone', step: 'upgraded', reason: null, from: '0.9.0', to: '1.0.0' }],
    };
    await mkdir(join(home, 'state'), { recursive: true });
    await writeFile(join(home, 'state', 'rollouts.json'), JSON.stringify([old]));
    // The other viewers take the records the old host writes once they trust its key, as any viewer's.
    await addTrust(homeOf('r1'), (await loadIdentity(home)).publicKey, 'old-host');
    await start('old-host', 5, ['--cluster-role', 'viewer']);
    const moved = await until('the old rollout listed by another viewer', async () => (await read(agents.r1!, 'rollouts')).find((r) => r.id === old.id), 10_000);
    assert.deepEqual([moved.backend, moved.state, moved.version, moved.nodes[0]!.step], ['echo', 'done', '1.0.0', 'upgraded']);
    await until('the file set aside', async () => (existsSync(join(home, 'state', 'rollouts.json.migrated')) ? true : undefined), 5000);
    assert.equal(existsSync(join(home, 'state', 'rollouts.json')), false);
  });

  test('while a rollout runs, another viewer\'s rollout or pin of the backend is told to wait for it, not to resume it', async () => {
    const watcher = await connect({ node: agents.r2!.url, home: agents.r2!.home });
    try {
      // A build whose start takes 3 s: the rollout is still running while the other viewer asks.
      const slow = await echoSource(root, '1.4.0');
      await writeFile(join(slow, 'run.sh'), (await readFile(join(slow, 'run.sh'), 'utf8')).replace(/^exec /m, 'sleep 3\nexec '));
      for (const gallery of galleries) await writeGallery(gallery, [{ name: 'echo', uri: slow, version: '1.4.0' }]);
      await offeredEverywhere(agents.r1!, '1.4.0');
      const running = new Promise<string>((resolve) => {
        const off = watcher.onEvent((e) => {
          if (e.type === 'rollout' && e.rollout.state === 'running' && e.rollout.nodes[0]?.step === 'upgrading') {
            off();
            resolve(e.rollout.id);
          }
        });
      });
      const upgrade = startCli(agents.r1!, 'upgrade', 'echo', '--on', 'all');
      const id = await running;
      const said = `hangar: rollout ${id} of echo is running, run by r1: wait for it to end (hangar rollouts)\n`;
      for (const args of [['upgrade', 'echo', '--on', 'all'], ['pin', 'echo', '1.1.0']]) {
        const refused = await hangar(agents.r2!, ...args);
        assert.deepEqual([refused.code, refused.stderr], [4, said], args[0]);
      }
      assert.equal((await upgrade.exited).code, 0, upgrade.stderr());
    } finally {
      watcher.close();
    }
  });
});
