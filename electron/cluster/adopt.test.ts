// A cluster set up the manual way (`hangar cluster nats-config`, passwords, trust lines) moved to invitations with
// `hangar cluster init --adopt`, on Debian's nats-server 2.9: the pin it held is still in force, its node keeps its id,
// and `hangar agent` alone on the admin and one `--join` on the node bring it back.
import assert from 'node:assert/strict';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { cli, hangar, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { generatedCluster, type GeneratedCluster } from './test-cluster.ts';
import { runNats, type NatsServer } from './test-nats.ts';

/** This file's own fixed ports, below the ephemeral range: the server, then each agent's backends. */
const NATS_PORT = 28300;
const PORTS: Record<string, string> = { gpu1: '28310-28319', desk: '28320-28329' };
const HEARTBEAT_MS = 300;

describe('hangar cluster init --adopt', () => {
  let root: string;
  let gallery: string;
  let cluster: GeneratedCluster;
  let nats: NatsServer | undefined;
  const agents: Record<string, Agent> = {};

  const stopAll = async () => {
    for (const agent of Object.values(agents)) {
      agent.child.kill('SIGTERM');
      if (agent.child.exitCode === null) await new Promise((resolve) => agent.child.once('exit', resolve));
    }
    await nats?.stop();
  };

  before(async () => {
    root = await tempDir('cluster-adopt');
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    cluster = await generatedCluster({ root, nodes: ['gpu1'], viewers: ['desk'], port: NATS_PORT, ports: PORTS, heartbeatMs: HEARTBEAT_MS });
    nats = cluster.nats;
    for (const machine of ['gpu1', 'desk']) {
      agents[machine] = await startAgent(cluster.homes[machine]!, gallery, cluster.agentArgs[machine]!, { ...process.env, HANGAR_CLUSTER_PASSWORD: cluster.passwords[machine]! });
    }
    const pinned = await hangar(agents.desk!, 'pin', 'echo', '1.0.0', '--on', 'gpu1');
    assert.equal(pinned.code, 0, pinned.stderr);
    await until('gpu1 converged on the pin', async () => {
      const view = await read(agents.desk!, 'desired');
      return view.nodes.some((n) => n.node === cluster.keys.gpu1!.id && n.state === 'converged') ? true : undefined;
    }, 20_000);
    await stopAll();
  });

  after(async () => {
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await nats?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('keeps the name, the address and the store, says what changes, and the machines come back with one command each', async () => {
    const adopted = await cli('--home', cluster.homes.desk!, 'cluster', 'init', '--adopt', '--url', `nats://127.0.0.1:${NATS_PORT}`, '--out', cluster.config, '--name', 'desk');
    assert.equal(adopted.code, 0, adopted.stderr);
    assert.match(adopted.stdout, /kept: the cluster's name hangar-[0-9a-f]{24} .* and its store \(pins, rollouts, status\)/);
    assert.match(adopted.stdout, /gpu1: on this machine, hangar cluster invite --role node --name gpu1 --key KEY_OF_gpu1/);
    const before = await readFile(`${cluster.config}.nats-config`, 'utf8');
    const now = await readFile(cluster.config, 'utf8');
    const name = (text: string) => /^server_name: (.*)$/m.exec(text)?.[1];
    assert.equal(name(now), name(before), 'the same cluster name: every record stays valid');
    assert.match(now, /^operator: /m);
    const storeDir = JSON.parse(/^jetstream \{ store_dir: (".*") \}$/m.exec(now)![1]!) as string;
    assert.deepEqual((await readdir(join(storeDir, 'jetstream'))).filter((d) => d === 'STORE' || /^A[A-Z0-9]{55}$/.test(d)).length, 1, 'the buckets moved to the new STORE account');
    assert.equal(await stat(join(storeDir, 'jetstream', 'STORE')).catch(() => null), null);

    nats = await runNats(['-c', cluster.config]);
    const invited = await cli('--home', cluster.homes.desk!, 'cluster', 'invite', '--role', 'node', '--name', 'gpu1', '--key', cluster.keys.gpu1!.key, '--json');
    assert.equal(invited.code, 0, invited.stderr);
    const { token } = JSON.parse(invited.stdout) as { token: string };
    agents.desk = await startAgent(cluster.homes.desk!, gallery, ['--ports', PORTS.desk!, '--heartbeat', String(HEARTBEAT_MS)]);
    agents.gpu1 = await startAgent(cluster.homes.gpu1!, gallery, ['--ports', PORTS.gpu1!, '--heartbeat', String(HEARTBEAT_MS)], { ...process.env, HANGAR_JOIN_TOKEN: token });
    const card = await until('gpu1 online and trusting desk, under its old id', async () => {
      const cards = await read(agents.desk!, 'nodes');
      return cards.find((c) => c.name === 'gpu1' && c.status === 'online' && c.access === 'trusted');
    }, 15_000);
    assert.equal(card.id, cluster.keys.gpu1!.id);
    const view = await read(agents.desk!, 'desired');
    assert.deepEqual(view.desired.map((d) => [d.backend, d.version]), [['echo', '1.0.0']], 'the pin made before is still in force');
    const listed = await hangar(agents.desk!, 'ls', '--on', 'gpu1');
    assert.equal(listed.code, 0, listed.stderr);
  });
});
