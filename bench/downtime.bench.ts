// reinstall_downtime_ms: how long a loaded model stops answering (Status READY from its port) while its backend is
// reinstalled, on a real LocalNode with the echo backend, against the floor measured in the same run: a bare spawn of
// the same backend's run.sh to its first Health OK, in the environment Hangar gives it (the host's, plus the runtime;
// a reinstall must stop the old process and start a new one, and the start is what cannot be cut), found by the same
// probe, so that the probe's own work weighs on both. Hangar's own respawn gap is given beside it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalNode } from '../electron/core/node.ts';
import { BackendClient } from '../electron/core/supervisor/grpc-client.ts';
import { portAnswers } from '../electron/core/supervisor/readiness.ts';
import { echoSource, runJob, writeGallery } from '../electron/core/testing/fixtures.ts';
import type { NodeEvent } from '../shared/types.ts';
import { inTurns, median, type BenchFigure } from './figure.ts';
import { bareSpawnToHealth } from './spawn-floor.ts';

const ROUNDS = 25;
const PROBE_EVERY_MS = 2;

/**
 * Asks the model's port for Status every few ms while `work` runs; returns the longest stretch without READY. The port
 * comes from the node's events, and while nothing listens on it the probe only tries a TCP connect (a gRPC call to a
 * closed port costs a new channel each time), so the probe itself costs the node little while its backend starts.
 */
async function longestSilence(node: LocalNode, model: string, work: () => Promise<unknown>): Promise<number> {
  let current = (await node.processes({ node: 'local' })).find((p) => p.model === model)?.port ?? null;
  const follow = (event: NodeEvent) => {
    if (event.type === 'process' && event.process.model === model) current = event.process.port;
  };
  node.on('event', follow);
  let port = current;
  let client = port === null ? null : new BackendClient(`127.0.0.1:${port}`);
  let lastAnswer = performance.now();
  let longest = 0;
  let running = true;
  const probe = (async () => {
    while (running) {
      const ready = port !== null && (await portAnswers(port)) && (await client?.status(200).then((s) => s.state === 'READY', () => false));
      const now = performance.now();
      if (ready) {
        longest = Math.max(longest, now - lastAnswer);
        lastAnswer = now;
      } else {
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
  node.off('event', follow);
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
    const bare: number[] = [];
    const echoDir = join(root, 'home', 'backends', 'echo');
    for (let round = 0; round < ROUNDS; round++) {
      await inTurns(round, [
        async () => bare.push(await bareSpawnToHealth(echoDir, { pollEveryMs: PROBE_EVERY_MS })),
        async () => respawn.push(await longestSilence(node, 'm1', () => node.respawn({ node: 'local', model: 'm1' }))),
        async () => reinstall.push(await longestSilence(node, 'm1', () => runJob(node, node.install({ node: 'local', name: 'echo', force: true })))),
      ]);
    }
    const [down, floor] = [median(reinstall), median(bare)];
    return [
      {
        name: 'reinstall_downtime_ms',
        value: down,
        unit: 'ms',
        goal: 1.15 * floor,
        note: `the longest gap in READY answers during a reinstall; floor: a bare spawn of run.sh to Health OK by the same probe ${floor.toFixed(0)} ms (goal 1.15x); Hangar's respawn gap ${median(respawn).toFixed(0)} ms; each going first in turn, median of ${ROUNDS}`,
      },
    ];
  } finally {
    await node.close({ stopBackends: true });
    await rm(root, { recursive: true, force: true });
  }
}
