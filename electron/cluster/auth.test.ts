// Cluster security on a real nats-server running the shipped example configuration (docs/nats-cluster.conf):
// credentials are checked, and the per-node subject permissions keep a node from answering for another.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { connect, PermissionViolationError } from '@nats-io/transport-node';
import { after, before, describe, test } from 'node:test';
import type { NodeCard } from '../../shared/types.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { json, startAgent, type Agent } from '../agent/test-agent.ts';
import { callSubject } from './subjects.ts';
import { startNats, type NatsServer } from './test-nats.ts';

const run = promisify(execFile);
const NODE1 = '1f0c9a2b3c4d';
const NODE2 = '5e6f7a8b9c0d';

describe('cluster credentials and subject permissions', () => {
  let root: string;
  let gallery: string;
  let nats: NatsServer;
  const agents: Agent[] = [];

  const homeWithId = async (name: string, id: string) => {
    const home = join(root, name);
    await mkdir(join(home, 'state'), { recursive: true });
    await writeFile(join(home, 'state', 'node-id'), id + '\n');
    return home;
  };
  const joinArgs = (user: string, ports: string) => ['--cluster', nats.url, '--cluster-user', user, '--name', user, '--ports', ports, '--heartbeat', '300'];
  const asUser = (user: string, pass: string) => connect({ servers: nats.url.replace('nats://', ''), user, pass });

  before(async () => {
    root = await tempDir('cluster-auth');
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    const config = join(root, 'nats.conf');
    await writeFile(config, await readFile('docs/nats-cluster.conf', 'utf8'));
    nats = await startNats(['-c', config]);
    agents.push(await startAgent(await homeWithId('home-1', NODE1), gallery, joinArgs('node1', '23500-23549'), { ...process.env, HANGAR_CLUSTER_PASSWORD: 'change-me-node1' }));
    agents.push(await startAgent(await homeWithId('home-2', NODE2), gallery, joinArgs('node2', '23550-23599'), { ...process.env, HANGAR_CLUSTER_PASSWORD: 'change-me-node2' }));
  });

  after(async () => {
    for (const agent of agents) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('nodes with their own credentials see each other and route calls', async () => {
    const deadline = Date.now() + 2000;
    let cards: NodeCard[] = [];
    while (Date.now() < deadline && cards.filter((c) => c.status === 'online').length < 2) cards = await json<NodeCard[]>(agents[0]!, 'nodes');
    assert.deepEqual(cards.map((c) => [c.id, c.status]), [[NODE1, 'online'], [NODE2, 'online']]);
    assert.deepEqual(await json(agents[0]!, 'ls', '--on', 'node2'), []);
  });

  test('a wrong password is refused with one clear line', async () => {
    const home = await homeWithId('home-wrong', '0a0b0c0d0e0f');
    const failed = await run(process.execPath, ['dist/agent/cli.js', 'agent', '--home', home, '--listen', '127.0.0.1:0', '--gallery', gallery, ...joinArgs('node1', '23600-23649')], {
      env: { ...process.env, HANGAR_CLUSTER_PASSWORD: 'wrong' },
      timeout: 20_000,
    }).then(() => null, (error: { code: number; stderr: string }) => error);
    assert.ok(failed, 'the agent did not start');
    assert.equal(failed.code, 1);
    assert.equal(failed.stderr, `hangar: cannot join the cluster at ${nats.url}: the server refused the credentials (authorization violation)\n`);
  });

  test('a non-loopback server with no credentials is refused before any connection', async () => {
    const home = await homeWithId('home-open', '0a0b0c0d0e10');
    const failed = await run(process.execPath, ['dist/agent/cli.js', 'agent', '--home', home, '--listen', '127.0.0.1:0', '--gallery', gallery, '--cluster', 'nats://192.0.2.1:4222'], { timeout: 20_000 })
      .then(() => null, (error: { code: number; stderr: string }) => error);
    assert.equal(failed?.code, 1);
    assert.match(failed?.stderr ?? '', /^hangar: refusing to join nats:\/\/192\.0\.2\.1:4222 with no credentials: pass .* \(or --insecure\)\n$/);
  });

  test("the permissions keep node1 from serving node2's subject; node2 still answers its own calls", async () => {
    const intruder = await asUser('node1', 'change-me-node1');
    const viewer = await asUser('viewer', 'change-me-viewer');
    try {
      const refused = new Promise<Error>((resolve) => {
        intruder.subscribe(callSubject(NODE2), {
          callback: (error) => {
            if (error) resolve(error);
          },
        });
      });
      const error = await refused;
      assert.ok(error instanceof PermissionViolationError, String(error));
      assert.match(error.message, /Permissions Violation for Subscription to "hangar\.node\.5e6f7a8b9c0d\.call"/);
      const reply = await viewer.request(callSubject(NODE2), JSON.stringify({ method: 'info', params: { node: NODE2 } }), { timeout: 2000 });
      const envelope = JSON.parse(reply.string()) as { ok: boolean; value: { id: string; name: string } };
      assert.deepEqual([envelope.ok, envelope.value.id, envelope.value.name], [true, NODE2, 'node2']);
    } finally {
      await intruder.close();
      await viewer.close();
    }
  });
});
