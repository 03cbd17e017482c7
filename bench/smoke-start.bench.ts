// smoke_start_overhead_ms: what the smoke start adds to an upgrade with no process running (request to job done with
// it, minus the same upgrade without it), against its floor: the same work done by hand, a bare spawn of the same
// echo backend to its first Health answer, then SIGTERM until it has exited. Rounds interleave them, each going first
// in turn, on a real LocalNode, each upgrade to a fresh version; a bare spawn to Health alone is given beside it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LocalNode } from '../electron/core/node.ts';
import { echoSource, runJob, writeGallery } from '../electron/core/testing/fixtures.ts';
import { inTurns, median, type BenchFigure } from './figure.ts';
import { bareSpawnToHealth } from './spawn-floor.ts';

const ROUNDS = 15;

export default async function (): Promise<BenchFigure[]> {
  const root = await mkdtemp(join(tmpdir(), 'hangar-bench-smoke-'));
  const gallery = join(root, 'index.yaml');
  const publish = async (version: string) => writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, version), version }]);
  await publish('1.0.0');
  const node = new LocalNode({ home: join(root, 'home'), galleries: [{ name: 'bench', location: gallery }], runtimeEnv: { HANGAR_NODE: process.execPath }, capability: 'default' });
  await node.start();
  let minor = 0;
  /** One upgrade to a new version, request to job done. */
  const upgrade = async (smokeStart: boolean): Promise<number> => {
    const version = `1.${++minor}.0`;
    await publish(version);
    const start = performance.now();
    const job = await runJob(node, node.upgrade({ node: 'local', name: 'echo', smokeStart }));
    const elapsed = performance.now() - start;
    if (job.phase !== 'done') throw new Error(`the upgrade to ${version} ended "${job.phase}"`);
    return elapsed;
  };
  try {
    await runJob(node, node.install({ node: 'local', name: 'echo' }));
    const checked: number[] = [];
    const unchecked: number[] = [];
    const floor: number[] = [];
    const toHealth: number[] = [];
    const echo = join(node.backendsDir, 'echo');
    for (let i = 0; i < ROUNDS; i++) {
      await inTurns(i, [
        async () => checked.push(await upgrade(true)),
        async () => unchecked.push(await upgrade(false)),
        async () => floor.push(await bareSpawnToHealth(echo, { andStop: true })),
        async () => toHealth.push(await bareSpawnToHealth(echo)),
      ]);
    }
    const overhead = median(checked) - median(unchecked);
    return [
      {
        name: 'smoke_start_overhead_ms',
        value: overhead,
        unit: 'ms',
        goal: +median(floor).toFixed(1),
        note: `an upgrade with nothing running: ${median(checked).toFixed(0)} ms with the smoke start, ${median(unchecked).toFixed(0)} ms without; goal: the floor, the same backend by hand: spawn -> listening line -> one Health -> SIGTERM -> exited (to Health alone ${median(toHealth).toFixed(0)} ms), each going first in turn, median of ${ROUNDS}`,
      },
    ];
  } finally {
    await node.close({ stopBackends: true });
    await rm(root, { recursive: true, force: true });
  }
}
