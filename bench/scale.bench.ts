// Flat listings: gallery(), backends() and deleting one backend, at 10, 100, 1,000 and 5,000 installed backends (each
// with a gallery entry), on a real LocalNode and a real backends directory, and the same calls over the WebSocket of
// the built agent at 5,000. Goal: each at most 20 ms in process and 40 ms over the WebSocket at 5,000, and at most 2x
// its time at 10 (what does not grow with the backends: a call, a view per entry).
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect } from '../electron/agent/connect.ts';
import { startAgent } from '../electron/agent/test-agent.ts';
import { installedBackends } from '../electron/core/testing/fixtures.ts';
import { LocalNode } from '../electron/core/node.ts';
import type { NodeApi } from '../shared/api.ts';
import { median, type BenchFigure } from './figure.ts';

const SIZES = [10, 100, 1_000, 5_000];
const LARGEST = SIZES.at(-1)!;
const CALLS = 9;
const DELETES = 5;

interface Timings {
  gallery: number;
  backends: number;
  deleteOne: number;
}

async function timeCalls(call: () => Promise<unknown>, times: number): Promise<number> {
  await call(); // the first call loads the gallery and the index; what users repeat is what is measured
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    await call();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

/** The three figures through `api`, whichever transport it is. */
async function measureApi(api: Pick<NodeApi, 'gallery' | 'backends' | 'delete' | 'waitJob'>): Promise<Timings> {
  const gallery = await timeCalls(() => api.gallery({ node: 'local' }), CALLS);
  const backends = await timeCalls(() => api.backends({ node: 'local' }), CALLS);
  const deletes: number[] = [];
  for (let i = 0; i < DELETES; i++) {
    const start = performance.now();
    const job = await api.delete({ node: 'local', name: `backend-${String(i).padStart(4, '0')}` });
    const done = await api.waitJob({ node: 'local', id: job.id });
    if (done.state !== 'done') throw new Error(`delete failed: ${done.error}`);
    deletes.push(performance.now() - start);
  }
  return { gallery, backends, deleteOne: median(deletes) };
}

async function inProcess(root: string, count: number): Promise<Timings> {
  const home = join(root, `home-${count}`);
  const gallery = await installedBackends(root, home, count);
  const node = new LocalNode({ home, galleries: [{ name: 'scale', location: gallery }], runtimeEnv: {}, capability: 'default' });
  await node.start();
  try {
    return await measureApi(node);
  } finally {
    await node.close({ stopBackends: true });
  }
}

async function overWebSocket(root: string, count: number): Promise<Timings> {
  const home = join(root, `agent-home-${count}`);
  const gallery = await installedBackends(root, home, count);
  const agent = await startAgent(home, gallery);
  const client = await connect({ node: agent.url, home });
  try {
    return await measureApi(client);
  } finally {
    client.close();
    // Its home is removed next: the agent must have written its last state file first.
    const exited = once(agent.child, 'exit');
    agent.child.kill('SIGTERM');
    await exited;
  }
}

export default async function (): Promise<BenchFigure[]> {
  const root = mkdtempSync(join(tmpdir(), 'hangar-bench-scale-'));
  try {
    const results = new Map<number, Timings>();
    for (const count of SIZES) results.set(count, await inProcess(root, count));
    const wire = await overWebSocket(root, LARGEST);
    const figures: BenchFigure[] = [];
    for (const [key, what] of [
      ['gallery', 'gallery()'],
      ['backends', 'backends()'],
      ['deleteOne', 'delete one backend, request to job done'],
    ] as const) {
      const scaling = SIZES.map((n) => `${n}: ${results.get(n)![key].toFixed(1)} ms`).join(', ');
      const largest = results.get(LARGEST)![key];
      const smallest = results.get(SIZES[0]!)![key];
      const name = key === 'deleteOne' ? 'delete' : key;
      figures.push(
        { name: `${name}_ms_${LARGEST}`, value: largest, unit: 'ms', goal: 20, note: `${what} in process with N installed (${scaling}), median of ${key === 'deleteOne' ? DELETES : CALLS}` },
        { name: `${name}_growth_${SIZES[0]}_to_${LARGEST}`, value: largest / smallest, unit: 'x', goal: 2, note: `${what} at ${LARGEST} against at ${SIZES[0]}` },
        { name: `${name}_ws_ms_${LARGEST}`, value: wire[key], unit: 'ms', goal: 40, note: `${what} over the built agent's WebSocket at ${LARGEST}` },
      );
    }
    return figures;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
