// parallel_loads_ratio: 8 models loaded at once on one backend, against 8 models loaded at once on 8 backends (the
// same echo build), on a real LocalNode. Loads of different models never wait for each other, only for swaps.
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { serializeMetadata } from '../electron/core/install/metadata.ts';
import { LocalNode } from '../electron/core/node.ts';
import { BUILT_ECHO } from '../electron/core/testing/fixtures.ts';
import { median, type BenchFigure } from './figure.ts';

const MODELS = 8;
const ROUNDS = 5;

async function timeLoads(node: LocalNode, backends: string[]): Promise<number> {
  const models = Array.from({ length: MODELS }, (_, i) => `m${i}`);
  const start = performance.now();
  await Promise.all(models.map((model, i) => node.load({ node: 'local', backend: backends[i % backends.length]!, model })));
  const elapsed = performance.now() - start;
  await Promise.all(models.map((model) => node.stop({ node: 'local', model })));
  return elapsed;
}

export default async function (): Promise<BenchFigure[]> {
  const root = await mkdtemp(join(tmpdir(), 'hangar-bench-loads-'));
  const names = Array.from({ length: MODELS }, (_, i) => `echo-${i}`);
  for (const name of names) {
    const dir = join(root, 'home', 'backends', name);
    await cp(BUILT_ECHO, dir, { recursive: true });
    const meta = { name, alias: null, metaBackendFor: null, galleryUrl: null, installedAt: new Date().toISOString(), version: '1.0.0', uri: null, digest: null, sha256: null };
    await writeFile(join(dir, 'metadata.json'), serializeMetadata(meta));
  }
  const node = new LocalNode({ home: join(root, 'home'), galleries: [], runtimeEnv: { HANGAR_NODE: process.execPath }, capability: 'default' });
  await node.start();
  try {
    const one: number[] = [];
    const spread: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      one.push(await timeLoads(node, [names[0]!]));
      spread.push(await timeLoads(node, names));
    }
    return [
      {
        name: 'parallel_loads_ratio',
        value: median(one) / median(spread),
        unit: 'x',
        goal: 1.2,
        note: `${MODELS} models at once on one backend ${median(one).toFixed(0)} ms vs on ${MODELS} backends ${median(spread).toFixed(0)} ms, interleaved, median of ${ROUNDS}`,
      },
    ];
  } finally {
    await node.close({ stopBackends: true });
    await rm(root, { recursive: true, force: true });
  }
}
