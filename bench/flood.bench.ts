// cli_under_flood_ms: `hangar ps --json` while the agent holds a flood of 3,000 slow connections that never finish
// their request (from ten loopback addresses, the CLI's own among them), against the same command with no flood,
// measured in the same run. The agent runs with its real limits.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openSlowSockets } from '../electron/agent/hostile-peers.ts';
import { startAgent } from '../e2e/fixtures/agent.ts';
import { copyStarterGallery } from '../e2e/fixtures/gallery.ts';
import { median, type BenchFigure } from './figure.ts';

const RUNS = 5;
const SLOW_SOCKETS = 3000;
const ATTACKERS = Array.from({ length: 10 }, (_, i) => `127.0.0.${i + 1}`);

export default async function (): Promise<BenchFigure[]> {
  const root = await mkdtemp(join(tmpdir(), 'hangar-bench-flood-'));
  const gallery = await copyStarterGallery(join(root, 'gallery'));
  const agent = await startAgent({ home: join(root, 'home'), gallery: gallery.index });
  const ps = () => {
    const start = performance.now();
    execFileSync('bin/hangar.js', ['--node', agent.url, '--token', agent.token, 'ps', '--json'], { stdio: ['ignore', 'pipe', 'inherit'] });
    return performance.now() - start;
  };
  try {
    const flooded: number[] = [];
    const quiet: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      quiet.push(ps());
      const flood = openSlowSockets(agent.url, SLOW_SOCKETS, ATTACKERS);
      await flood.settled;
      flooded.push(ps());
      flood.destroy();
      await flood.allClosed;
    }
    const [floodMs, quietMs] = [median(flooded), median(quiet)];
    return [
      {
        name: 'cli_under_flood_ms',
        value: floodMs,
        unit: 'ms',
        goal: 2000,
        note: `hangar ps --json with ${SLOW_SOCKETS} slow sockets held; the same with none ${quietMs.toFixed(0)} ms; median of ${RUNS}`,
      },
    ];
  } finally {
    await agent.stop();
    await rm(root, { recursive: true, force: true });
  }
}
