// Flat at 1,000 installed backends: gallery(), backends() and deleting one backend, at 10, 100 and 1,000 installed
// backends (each with a gallery entry), on a real LocalNode and a real backends directory.
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { installedBackends } from '../electron/core/testing/fixtures.ts';
import { LocalNode } from '../electron/core/node.ts';
import { median, type BenchFigure } from './figure.ts';

const SIZES = [10, 100, 1_000];
const CALLS = 7;
const DELETES = 3;

async function homeWith(root: string, count: number): Promise<{ home: string; gallery: string }> {
  const home = join(root, `home-${count}`);
  return { home, gallery: await installedBackends(root, home, count) };
}

async function timeCalls(call: () => Promise<unknown>, times: number): Promise<number> {
  await call(); // the first call loads the gallery and warms caches; what users repeat is what is measured
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    await call();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

async function measure(root: string, count: number): Promise<{ gallery: number; backends: number; deleteOne: number }> {
  const { home, gallery } = await homeWith(root, count);
  const node = new LocalNode({ home, galleries: [{ name: 'scale', location: gallery }], runtimeEnv: {}, capability: 'default' });
  await node.start();
  try {
    const galleryMs = await timeCalls(() => node.gallery({ node: 'local' }), CALLS);
    const backendsMs = await timeCalls(() => node.backends({ node: 'local' }), CALLS);
    const deletes: number[] = [];
    for (let i = 0; i < DELETES; i++) {
      const start = performance.now();
      const job = await node.delete({ node: 'local', name: `backend-${String(i).padStart(4, '0')}` });
      const done = await node.waitJob({ node: 'local', id: job.id });
      if (done.state !== 'done') throw new Error(`delete failed: ${done.error}`);
      deletes.push(performance.now() - start);
    }
    return { gallery: galleryMs, backends: backendsMs, deleteOne: median(deletes) };
  } finally {
    await node.close({ stopBackends: true });
  }
}

export default async function (): Promise<BenchFigure[]> {
  const root = mkdtempSync(join(tmpdir(), 'hangar-bench-scale-'));
  try {
    const results = new Map<number, Awaited<ReturnType<typeof measure>>>();
    for (const count of SIZES) results.set(count, await measure(root, count));
    const scaling = (pick: (r: Awaited<ReturnType<typeof measure>>) => number) => SIZES.map((n) => `${n}: ${pick(results.get(n)!).toFixed(1)} ms`).join(', ');
    const at1000 = results.get(1_000)!;
    return [
      { name: 'gallery_ms_1000', value: at1000.gallery, unit: 'ms', goal: 20, note: `gallery() with N installed (${scaling((r) => r.gallery)})` },
      { name: 'backends_ms_1000', value: at1000.backends, unit: 'ms', goal: 20, note: `backends() (${scaling((r) => r.backends)})` },
      { name: 'delete_ms_1000', value: at1000.deleteOne, unit: 'ms', goal: 20, note: `delete one backend, request to job done (${scaling((r) => r.deleteOne)})` },
    ];
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
