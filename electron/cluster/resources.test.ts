// Machines you can see, on a real cluster: a node with nvidia-smi and rocm-smi on its PATH (small scripts printing
// what the real tools print for the queries Hangar makes) shows both GPUs on its card, with VRAM and use, and the GPU
// memory of a backend process whose real server is a child of its run.sh; a node with no tool says so, not zero.
import assert from 'node:assert/strict';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ResourcesView } from '../../shared/types.ts';
import { fakeGpuTools } from '../core/testing/fake-gpu-tools.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { hangar, json, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { trustingHomes } from './test-cluster.ts';
import { startNats, type NatsServer } from './test-nats.ts';

const MiB = 1024 * 1024;

describe('machines you can see', () => {
  let root: string;
  let nats: NatsServer;
  let apps: string;
  const agents: Agent[] = [];

  before(async () => {
    root = await tempDir('resources');
    nats = await startNats();
    const tools = await fakeGpuTools(root);
    apps = join(root, 'apps.csv');
    // A backend whose run.sh starts its server as a child (no exec): the GPU memory is the child's.
    const tree = await echoSource(root, '1.0.0');
    const runSh = join(tree, 'run.sh');
    await writeFile(runSh, (await readFile(runSh, 'utf8')).replace(/^exec /m, ''));
    const gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'tree', uri: tree, version: '1.0.0' }]);
    await trustingHomes(['gpu', 'plain'].map((h) => join(root, h)));
    const common = ['--cluster', nats.url, '--heartbeat', '300'];
    const env = { ...process.env, PATH: `${tools.nvidia}:${tools.amd}:${process.env.PATH}`, FAKE_GPU_APPS: apps, HANGAR_FORCE_CAPABILITY: 'default' };
    agents.push(await startAgent(join(root, 'gpu'), gallery, [...common, '--name', 'gpu', '--ports', '26300-26309'], env));
    agents.push(await startAgent(join(root, 'plain'), gallery, [...common, '--name', 'plain', '--ports', '26310-26319']));
    await until('both nodes online', async () => ((await read(agents[1]!, 'nodes')).filter((c) => c.status === 'online').length === 2 ? true : undefined), 5000);
  });

  after(async () => {
    for (const agent of agents) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  });

  test("each node's card carries its CPUs, memory, disk and GPUs; a node with no GPU tool says so", async () => {
    const cards = await read(agents[1]!, 'nodes');
    const gpu = cards.find((c) => c.name === 'gpu')!.resources!;
    assert.deepEqual(gpu.gpuTools, ['nvidia-smi', 'rocm-smi']);
    assert.deepEqual(gpu.gpus, [
      { vendor: 'nvidia', index: 0, model: 'NVIDIA GeForce RTX 4090', vramTotalBytes: 24564 * MiB, vramUsedBytes: 1024 * MiB, utilization: 7 },
      { vendor: 'amd', index: 0, model: 'Radeon RX 7900 XTX', vramTotalBytes: 25753026560, vramUsedBytes: 2147483648, utilization: 35 },
    ]);
    assert.ok(gpu.cpu.count >= 1 && gpu.cpu.load1 >= 0);
    assert.ok(gpu.memory!.totalBytes > gpu.memory!.availableBytes && gpu.memory!.availableBytes > 0);
    assert.ok(gpu.disk!.totalBytes >= gpu.disk!.freeBytes && gpu.disk!.freeBytes > 0);
    assert.equal('processes' in gpu, false, 'the card carries no per-process figures');
    const plain = cards.find((c) => c.name === 'plain')!.resources!;
    assert.deepEqual([plain.gpus, plain.gpuTools, plain.gpuProblem], [[], [], null]);
    const table = (await hangar(agents[1]!, 'nodes')).stdout;
    assert.match(table, /\nplain \(this host\) .* no GPU tool found /);
    assert.match(table, /\ngpu .* NVIDIA GeForce RTX 4090 1\.0G\/24\.0G 7%, Radeon RX 7900 XTX 2\.0G\/24\.0G 35% /);
    const all = await hangar(agents[1]!, 'resources', '--on', 'all');
    assert.equal(all.code, 0, all.stderr);
    assert.match(all.stdout, /^NODE +CPU +RAM +DISK +GPU +VRAM HELD\n/);
    assert.match(all.stdout, /\ngpu +\d+ × [\d.]+ .* NVIDIA GeForce RTX 4090 1\.0G\/24\.0G 7%.* 0 B\n/);
    assert.match(all.stdout, /\nplain +.* no GPU tool found +-\n/);
  });

  test("the GPU memory a backend's process tree holds is shown against its model", async () => {
    assert.equal((await hangar(agents[1]!, 'install', 'tree', '--on', 'gpu')).code, 0);
    const loaded = await json<{ pid: number }>(agents[1]!, 'load', 'tree', 'm-gpu', '--on', 'gpu');
    const children = (await readFile(`/proc/${loaded.pid}/task/${loaded.pid}/children`, 'utf8')).trim().split(/\s+/).map(Number);
    assert.equal(children.length, 1, 'run.sh runs the server as its child');
    await writeFile(apps, `${children[0]}, 512\n999999, 2048\n`);
    const resources = await until('the process holds GPU memory', async () => {
      const r = await json<ResourcesView>(agents[1]!, 'resources', '--on', 'gpu');
      return r.processes.length > 0 ? r : undefined;
    }, 10_000);
    assert.deepEqual(resources.processes, [{ model: 'm-gpu', pid: loaded.pid, vramBytes: 512 * MiB }]);
    const human = await hangar(agents[1]!, 'resources', '--on', 'gpu');
    assert.match(human.stdout, new RegExp(`\\nm-gpu +${loaded.pid} +512 MiB\\n`));
    const ps = (await hangar(agents[1]!, 'ps', '--on', 'gpu')).stdout;
    assert.match(ps, /^MODEL +BACKEND +PID .* MEM +VRAM +CWD/);
    assert.match(ps, new RegExp(`\\nm-gpu +tree +${loaded.pid} .* 512 MiB +ok\\b`), 'ps shows the GPU memory beside the memory');
    const all = (await hangar(agents[1]!, 'ps', '--on', 'all')).stdout;
    assert.match(all, /\ngpu +m-gpu .* 512 MiB +ok\b/);
    assert.doesNotMatch((await hangar(agents[1]!, 'ps', '--on', 'plain')).stdout, /VRAM/, 'no column where no tool reports it');
  });
});
