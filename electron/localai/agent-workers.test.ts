// A LocalAI cluster managed from a real `hangar agent`, as a user runs it: the agent joins Hangar's cluster and points
// at a LocalAI frontend and its NATS (one real nats-server for both), and the CLI lists, installs and rolls out across
// Hangar nodes and LocalAI workers alike. A second agent runs on a worker's own backends directory.
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { JobView } from '../../shared/types.ts';
import { hangar, json, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { trustingHomes } from '../cluster/test-cluster.ts';
import { startNats, type NatsServer } from '../cluster/test-nats.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { startGalleryServer, type GalleryServer } from './testing/gallery-server.ts';
import { startStandInFrontend, type StandInFrontend } from './testing/standin-frontend.ts';
import { StandInWorker } from './testing/standin-worker.ts';

const API_KEY = 'admin-key-0123456789';
const TOKEN = 'registration-token-0123456789';

/** The files under `dir` whose text holds `secret`. */
async function filesHolding(dir: string, secret: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    if ((await readFile(path, 'utf8').catch(() => '')).includes(secret)) found.push(path);
  }
  return found;
}

describe('a LocalAI cluster managed from hangar agent', () => {
  let root: string;
  let nats: NatsServer;
  let gallery: GalleryServer;
  let frontend: StandInFrontend;
  const agents: Agent[] = [];
  /** Everything the agent pointed at LocalAI writes to its stdout and stderr. */
  let hubOutput = '';
  const workers: Record<string, StandInWorker> = {};

  const nodes = () => read(agents[0]!, 'nodes');
  const startWorker = async (name: string, backendsDir: string, options: Partial<ConstructorParameters<typeof StandInWorker>[0]> = {}) => {
    workers[name] = new StandInWorker({ name, nats: nats.url, frontend: frontend.url, registrationToken: TOKEN, backendsDir, heartbeatMs: 200, indexCacheMs: 0, basePort: 25300 + 20 * Object.keys(workers).length, ...options });
    await workers[name].start();
  };

  before(async () => {
    root = await tempDir('localai-agent');
    nats = await startNats();
    gallery = await startGalleryServer([{ name: 'echo', version: '1.0.0' }]);
    frontend = await startStandInFrontend({ apiKey: API_KEY, registrationToken: TOKEN, galleries: [{ url: gallery.indexUrl, name: 'localai' }], staleMs: 1000, checkMs: 100 });
    for (const name of ['lai-0', 'lai-1', 'lai-3']) await startWorker(name, join(root, name));
    // This one keeps its gallery index for an hour, as LocalAI does.
    await startWorker('lai-2', join(root, 'lai-2'), { indexCacheMs: 60 * 60_000 });
    // A worker on the backends directory of the Hangar agent `box`, registered as LocalAI registers by default.
    await startWorker('lai-box', join(root, 'box', 'backends'), { address: `${hostname()}:25390`, basePort: 25390 });

    await trustingHomes([join(root, 'hub'), join(root, 'box')]);
    const keyFile = join(root, 'api-key');
    await writeFile(keyFile, `${API_KEY}\n`, { mode: 0o600 });
    const boxGallery = join(root, 'box-index.yaml');
    await writeGallery(boxGallery, [{ name: 'echo', uri: await echoSource(root, '2.0.0'), version: '2.0.0' }]);
    const cluster = (name: string) => ['--cluster', nats.url, '--name', name, '--heartbeat', '300', '--call-timeout', '3000'];
    agents.push(
      await startAgent(join(root, 'hub'), boxGallery, [
        ...cluster('hub'), '--ports', '24100-24199',
        '--localai-frontend', frontend.url, '--localai-api-key-file', keyFile, '--localai-nats', nats.url, '--localai-poll', '200', '--localai-reload-wait', '300',
      ]),
      await startAgent(join(root, 'box'), boxGallery, [...cluster('box'), '--ports', '24200-24299']),
    );
    for (const stream of [agents[0]!.child.stdout!, agents[0]!.child.stderr!]) stream.on('data', (chunk: Buffer) => (hubOutput += chunk.toString()));
  });

  after(async () => {
    for (const agent of agents) agent.child.kill('SIGKILL');
    for (const worker of Object.values(workers)) await worker.stop();
    await frontend?.close();
    await gallery?.close();
    await nats?.stop();
  });

  test('hangar nodes lists the workers beside the Hangar nodes, marked as LocalAI workers', async () => {
    const cards = await until('every node listed', async () => {
      const listed = await nodes();
      return listed.length === 7 && listed.every((c) => c.status === 'online') ? listed : undefined;
    }, 15_000);
    assert.deepEqual(cards.map((c) => [c.name, c.kind ?? 'hangar']), [
      ['box', 'hangar'], ['hub', 'hangar'], ['lai-0', 'localai-worker'], ['lai-1', 'localai-worker'], ['lai-2', 'localai-worker'], ['lai-3', 'localai-worker'], ['lai-box', 'localai-worker'],
    ]);
    const text = await hangar(agents[0]!, 'nodes');
    assert.match(text.stdout, /lai-1 \(LocalAI worker\)/);
    const status = await hangar(agents[0]!, 'localai', 'status');
    assert.match(status.stdout, new RegExp(`^LocalAI cluster: ${frontend.url.replace(/\./g, '\\.')}, 5 backend workers$`, 'm'));
    // The API key is never shown or logged.
    assert.doesNotMatch(text.stdout + text.stderr, new RegExp(API_KEY));
  });

  test('install on workers from the CLI, and the backend × node matrix across both kinds', async () => {
    for (const name of ['lai-0', 'lai-1', 'lai-2', 'lai-3']) {
      const result = await hangar(agents[0]!, 'install', 'echo', '--on', name);
      assert.equal(result.code, 0, result.stderr);
    }
    const matrix = await hangar(agents[0]!, 'ls', '--on', 'all');
    assert.equal(matrix.code, 0, matrix.stderr);
    const row = matrix.stdout.split('\n').find((line) => line.startsWith('echo'))!;
    assert.deepEqual(row.split(/\s+/).filter(Boolean), ['echo', '-', '-', '1.0.0', '1.0.0', '1.0.0', '1.0.0', '-']);
  });

  test('a rolling upgrade across workers: an offline one is skipped, one that keeps its old version halts it', async () => {
    await workers['lai-0']!.stop();
    // Offline as LocalAI says it (its heartbeat missed), not only as a failed read of it says it meanwhile.
    const offline = 'offline in LocalAI (no heartbeat from it)';
    await until('lai-0 offline in LocalAI', async () => ((await nodes()).find((c) => c.name === 'lai-0')?.reason === offline ? true : undefined), 15_000);
    gallery.publish([{ name: 'echo', version: '2.0.0' }]);
    // As after any gallery change: the index read again on demand.
    assert.equal((await hangar(agents[0]!, 'gallery', '--refresh', '--on', 'lai-1')).code, 0);
    assert.equal((await json<{ name: string; upgradable: boolean }[]>(agents[0]!, 'ls', '--on', 'lai-3'))[0]?.upgradable, true);
    const result = await hangar(agents[0]!, 'upgrade', 'echo', '--on', 'all');
    assert.notEqual(result.code, 0, 'a halted rollout fails the command');
    const [rollout] = await read(agents[0]!, 'rollouts');
    assert.equal(rollout!.state, 'halted');
    const steps = Object.fromEntries(rollout!.nodes.map((n) => [n.name, [n.step, n.reason]]));
    assert.deepEqual(steps['lai-0'], ['skipped', offline]);
    assert.equal(steps['lai-1']![0], 'upgraded');
    assert.equal(steps['lai-2']![0], 'failed');
    assert.match(String(steps['lai-2']![1]), /still reports 1\.0\.0, not 2\.0\.0: LocalAI's worker reads its gallery index from a cache/);
    assert.deepEqual(steps['lai-3'], ['skipped', 'halted: lai-2 failed']);
    // Recorded in the cluster's store like any other rollout: another viewer lists it, the workers' steps with it.
    const seen = await until('the rollout listed by box', async () => (await read(agents[1]!, 'rollouts')).find((r) => r.id === rollout!.id && r.state === 'halted'), 10_000);
    assert.deepEqual(seen.nodes.map((n) => [n.name, n.step]), rollout!.nodes.map((n) => [n.name, n.step]));
    const after = await json<{ node: string; backends: { name: string; version: string }[] }[]>(agents[0]!, 'ls', '--on', 'lai-1,lai-3');
    assert.deepEqual(after.map((c) => c.backends[0]?.version), ['2.0.0', '1.0.0']);
  });

  test('a worker on a Hangar agent\'s backends directory is one machine with it, and a Hangar swap there stops the worker\'s processes of the old tree', async () => {
    const install = await hangar(agents[0]!, 'install', 'echo', '--on', 'lai-box');
    assert.equal(install.code, 0, install.stderr);
    const [box, worker] = await until('box and lai-box paired', async () => {
      const cards = await nodes();
      const pair = [cards.find((c) => c.name === 'box')!, cards.find((c) => c.name === 'lai-box')!];
      return pair[0]!.pairedWorker && pair[1]!.localai?.pairedWith ? pair : undefined;
    }, 15_000);
    assert.equal(box!.pairedWorker, worker!.id);
    assert.equal(worker!.localai?.pairedWith, box!.id);
    assert.match((await hangar(agents[0]!, 'nodes')).stdout, /same machine and backends as box: Hangar's actions apply there/);
    // LocalAI's backend.install started the backend's process, in the directory the upgrade replaces.
    assert.deepEqual(workers['lai-box']!.running(), ['echo#0']);
    const upgrade = await json<JobView>(agents[0]!, 'upgrade', 'echo', '--on', 'box');
    assert.equal(upgrade.state, 'done', upgrade.error ?? '');
    await until('the worker stopped its process of the replaced tree', async () => (workers['lai-box']!.running().length === 0 ? true : undefined), 15_000);
    assert.deepEqual(workers['lai-box']!.received.filter((r) => r.subject === 'backend.stop').map((r) => r.body), [{ backend: 'echo' }]);
    // A rollout takes the machine once, as its Hangar node.
    await hangar(agents[0]!, 'upgrade', 'echo', '--on', 'all');
    const [rollout] = await read(agents[0]!, 'rollouts');
    assert.ok(rollout!.nodes.some((n) => n.name === 'box'));
    assert.ok(!rollout!.nodes.some((n) => n.name === 'lai-box'));
  });

  test('after all that, the API key is nowhere in what the agent wrote: its output, its home', async () => {
    assert.ok(frontend.requests.some((r) => r.authorized), 'the agent used the key');
    assert.doesNotMatch(hubOutput, new RegExp(API_KEY));
    assert.deepEqual(await filesHolding(join(root, 'hub'), API_KEY), []);
  });
});
