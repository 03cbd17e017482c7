// OCI pull throughput: ociSource (manifest, digest-verified streaming, safe extraction) against
// `curl | tar -xz` of the same blob from the same local registry.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createOciSource } from '../electron/core/install/oci/oci-source.ts';
import { hostPlatform } from '../electron/core/install/oci/platform.ts';
import { buildLayer, pushImage, type LayerEntry } from '../electron/core/install/oci/testing/image.ts';
import { startRegistry } from '../electron/core/install/oci/testing/registry.ts';
import { median, type BenchFigure } from './figure.ts';

const FILES = 25;
const FILE_BYTES = 8 * 1024 * 1024;
const RUNS = 3;

function randomFile(path: string): LayerEntry {
  return {
    path,
    size: FILE_BYTES,
    content: () =>
      Readable.from(
        (function* () {
          for (let left = FILE_BYTES; left > 0; left -= 1 << 20) yield randomBytes(Math.min(left, 1 << 20));
        })(),
      ),
  };
}

async function timed(run: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

export default async function (): Promise<BenchFigure[]> {
  const work = await mkdtemp(join(tmpdir(), 'hangar-oci-bench-'));
  const registry = await startRegistry();
  try {
    const entries = [{ path: 'data' }, ...Array.from({ length: FILES }, (_, i) => randomFile(`data/part-${i}.bin`))];
    const layer = await buildLayer(entries, { file: join(work, 'layer.tar.gz') });
    await pushImage(registry.url, 'bench/big', 'v1', { layers: [layer], platforms: [hostPlatform()] });

    const source = createOciSource().create(`${registry.host}/bench/big:v1`, { baseDir: null, baseUrl: null });
    const blobUrl = `${registry.url}/v2/bench/big/blobs/${layer.digest}`;
    const oci: number[] = [];
    const tar: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const ociDir = join(work, `oci-${run}`);
      const tarDir = join(work, `tar-${run}`);
      await Promise.all([mkdir(ociDir), mkdir(tarDir)]);
      oci.push(
        await timed(async () => {
          await source.fetchInto(ociDir, { signal: new AbortController().signal, onProgress: () => undefined, fetch: globalThis.fetch });
        }),
      );
      tar.push(
        await timed(async () => {
          const result = spawnSync('sh', ['-c', `curl -sf "${blobUrl}" | tar -xz -C "${tarDir}"`], { stdio: 'inherit' });
          if (result.status !== 0) throw new Error(`curl | tar failed (${result.status})`);
        }),
      );
      await Promise.all([rm(ociDir, { recursive: true }), rm(tarDir, { recursive: true })]);
    }
    const [ociMs, tarMs] = [median(oci), median(tar)];
    const mb = (layer.size / 1024 ** 2).toFixed(0);
    return [
      {
        name: 'oci_pull_vs_tar_ratio',
        value: ociMs / tarMs,
        unit: 'x',
        goal: 1.3,
        note: `${mb} MB layer: ociSource ${ociMs.toFixed(0)} ms vs curl|tar -xz ${tarMs.toFixed(0)} ms (medians of ${RUNS})`,
      },
    ];
  } finally {
    await registry.stop();
    await rm(work, { recursive: true, force: true });
  }
}
