// OCI pull throughput: ociSource (manifest, digest-verified streaming, safe extraction) against two peers pulling
// the same image from the same local registry:
// - `curl | gzip -dc | tar -x` of the layer blob: a fair stream (GNU tar's own -z is slower for reasons of its own);
// - `skopeo copy` to a directory, then `gzip -dc | tar -x` of its layer: what a container tool does.
// Nothing is deleted between runs: deleting a large tree slows the next writes on this disk for a while.
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
import { median, shell, timed, type BenchFigure } from './figure.ts';

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

export default async function (): Promise<BenchFigure[]> {
  const work = await mkdtemp(join(tmpdir(), 'hangar-oci-bench-'));
  const registry = await startRegistry();
  try {
    const entries = [{ path: 'data' }, ...Array.from({ length: FILES }, (_, i) => randomFile(`data/part-${i}.bin`))];
    const layer = await buildLayer(entries, { file: join(work, 'layer.tar.gz') });
    await pushImage(registry.url, 'bench/big', 'v1', { layers: [layer], platforms: [hostPlatform()] });

    const source = createOciSource().create(`${registry.host}/bench/big:v1`, { baseDir: null, baseUrl: null });
    const blobUrl = `${registry.url}/v2/bench/big/blobs/${layer.digest}`;
    const skopeo = spawnSync('skopeo', ['--version']).status === 0;
    const oci: number[] = [];
    const stream: number[] = [];
    const copy: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const dir = (kind: string) => join(work, `${kind}-${run}`);
      await Promise.all(['oci', 'stream', 'skopeo', 'skopeo-out'].map((kind) => mkdir(dir(kind))));
      oci.push(
        await timed(async () => {
          await source.fetchInto(dir('oci'), { signal: new AbortController().signal, onProgress: () => undefined, fetch: globalThis.fetch });
        }),
      );
      stream.push(await timed(async () => shell(`curl -sf "${blobUrl}" | gzip -dc | tar -x -C "${dir('stream')}"`)));
      if (skopeo) {
        const image = `docker://${registry.host}/bench/big:v1`;
        const layerFile = `${dir('skopeo')}/${layer.digest.replace('sha256:', '')}`;
        copy.push(
          await timed(async () =>
            shell(`skopeo copy -q --src-tls-verify=false ${image} dir:${dir('skopeo')} && gzip -dc ${layerFile} | tar -x -C "${dir('skopeo-out')}"`),
          ),
        );
      }
    }
    const [ociMs, streamMs] = [median(oci), median(stream)];
    const mb = (layer.size / 1024 ** 2).toFixed(0);
    const figures: BenchFigure[] = [
      {
        name: 'oci_pull_vs_tar_ratio',
        value: ociMs / streamMs,
        unit: 'x',
        goal: 1.1,
        note: `${mb} MB layer: ociSource ${ociMs.toFixed(0)} ms vs curl | gzip -dc | tar -x ${streamMs.toFixed(0)} ms (medians of ${RUNS})`,
      },
    ];
    if (skopeo) {
      const copyMs = median(copy);
      figures.push({ name: 'oci_pull_vs_skopeo_ratio', value: ociMs / copyMs, unit: 'x', goal: 1.1, note: `ociSource vs skopeo copy + gzip -dc | tar -x ${copyMs.toFixed(0)} ms` });
    } else {
      process.stderr.write('bench: oci_pull_vs_skopeo_ratio NOT MEASURED: skopeo is not installed (apt-get install skopeo)\n');
    }
    return figures;
  } finally {
    await registry.stop();
    await rm(work, { recursive: true, force: true });
  }
}
