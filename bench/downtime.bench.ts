// reinstall_downtime_ms: how long a loaded model stops answering (Status READY from its port) while its backend is
// reinstalled, against the same gap for a plain respawn of the model (the floor: a reinstall can do no better than
// stopping and starting the process), measured in the same run on a real LocalNode with the echo backend.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalNode } from '../electron/core/node.ts';
import { BackendClient } from '../electron/core/supervisor/grpc-client.ts';
import { echoSource, runJob, writeGallery } from '../electron/core/testing/fixtures.ts';
import { median, type BenchFigure } from './figure.ts';

const ROUNDS = 5;
const PROBE_EVERY_MS = 2;

/** Asks the model's port for Status every few ms while `work` runs; returns the longest stretch without READY. */
async function longestSilence(node: LocalNode, model: string, work: () => Promise<unknown>): Promise<number> {
  const portOf = async () => (await node.processes({ node: 'local' })).find((p) => p.model === model)?.port ?? null;
  let port = await portOf();
  let client = port === null ? null : new BackendClient(`127.0.0.1:${port}`);
  let lastAnswer = performance.now();
  let longest = 0;
  let running = true;
  const probe = (async () => {
    while (running) {
      const ready = await client?.status(200).then((s) => s.state === 'READY', () => false);
      const now = performance.now();
      if (ready) {
        longest = Math.max(longest, now - lastAnswer);
        lastAnswer = now;
      } else {
        const current = await portOf();
        if (current !== port) {
          client?.close();
          port = current;
          client = port === null ? null : new BackendClient(`127.0.0.1:${port}`);
        }
      }
      await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
    }
  })();
  await work();
  // The work is done once the model answers again.
  const doneAt = performance.now();
  while (lastAnswer < doneAt && performance.now() - doneAt < 30_000) await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
  running = false;
  await probe;
  client?.close();
  return longest;
}

export default async function (): Promise<BenchFigure[]> {
  const root = await mkdtemp(join(tmpdir(), 'hangar-bench-downtime-'));
  const gallery = join(root, 'index.yaml');
  await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
  const node = new LocalNode({ home: join(root, 'home'), galleries: [{ name: 'bench', location: gallery }], runtimeEnv: { HANGAR_NODE: process.execPath }, capability: 'default' });
  await node.start();
  try {
    await runJob(node, node.install({ node: 'local', name: 'echo' }));
    await node.load({ node: 'local', backend: 'echo', model: 'm1' });
    const reinstall: number[] = [];
    const respawn: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      respawn.push(await longestSilence(node, 'm1', () => node.respawn({ node: 'local', model: 'm1' })));
      reinstall.push(await longestSilence(node, 'm1', () => runJob(node, node.install({ node: 'local', name: 'echo', force: true }))));
    }
    const [down, floor] = [median(reinstall), median(respawn)];
    return [
      {
        name: 'reinstall_downtime_ms',
        value: down,
        unit: 'ms',
        goal: 1.15 * floor,
        note: `the longest gap in READY answers during a reinstall; floor: a respawn's gap ${floor.toFixed(0)} ms (goal 1.15x), interleaved, median of ${ROUNDS}`,
      },
    ];
  } finally {
    await node.close({ stopBackends: true });
    await rm(root, { recursive: true, force: true });
  }
}
