// OCI install throughput: the built agent (started as users start it, by bin/hangar.js) installing an image from a
// local registry, request to job done (its guarded fetch, the manifest, digest-verified streaming, safe extraction,
// the job and the swap), against two peers pulling the same image from the same registry, taking turns going first:
// - `curl | tee >(openssl dgst -sha256) | pigz -dc | tar -x` of the layer blob, its digest checked: a floor with the
//   fastest common tools (coreutils' sha256sum and GNU gzip take three to four times as long per GiB);
// - `skopeo copy` to a directory (which checks digests), then `gzip -dc | tar -x` of its layer: what a container
//   tool does.
// Nothing is deleted between runs: deleting a large tree slows the next writes on this disk for a while.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { connect } from '../electron/agent/connect.ts';
import { hostPlatform } from '../electron/core/install/oci/platform.ts';
import { buildLayer, pushImage, type LayerEntry } from '../electron/core/install/oci/testing/image.ts';
import { startRegistry } from '../electron/core/install/oci/testing/registry.ts';
import { inTurns, median, ratioSpread, shell, timed, type BenchFigure } from './figure.ts';

const FILES = 25;
const FILE_BYTES = 8 * 1024 * 1024;
const RUNS = 5;

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

/** What a bash script prints, failing on a non-zero exit (of any command of a pipeline); never blocks this process. */
async function bashOutput(script: string): Promise<string> {
  return (await promisify(execFile)('bash', ['-o', 'pipefail', '-c', script])).stdout.trim();
}

async function startAgent(home: string, gallery: string) {
  const child = spawn('bin/hangar.js', ['agent', '--home', home, '--gallery', gallery, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const line = (await once(createInterface({ input: child.stdout }), 'line'))[0] as string;
  return { child, url: /listening on (\S+)/.exec(line)![1]! };
}

export default async function (): Promise<BenchFigure[]> {
  const work = await mkdtemp(join(tmpdir(), 'hangar-oci-bench-'));
  const registry = await startRegistry();
  try {
    const runSh = { path: 'run.sh', content: '#!/bin/sh\nexec sleep 1000\n', mode: 0o755 };
    const entries = [runSh, { path: 'data' }, ...Array.from({ length: FILES }, (_, i) => randomFile(`data/part-${i}.bin`))];
    const layer = await buildLayer(entries, { file: join(work, 'layer.tar.gz') });
    await pushImage(registry.url, 'bench/big', 'v1', { layers: [layer], platforms: [hostPlatform()] });

    const gallery = join(work, 'index.yaml');
    await writeFile(gallery, Array.from({ length: RUNS }, (_, run) => `- name: big-${run}\n  uri: ${registry.host}/bench/big:v1\n`).join(''));
    const home = join(work, 'home');
    const agent = await startAgent(home, gallery);
    const client = await connect({ node: agent.url, home });
    const blobUrl = `${registry.url}/v2/bench/big/blobs/${layer.digest}`;
    const skopeo = spawnSync('skopeo', ['--version']).status === 0;
    const oci: number[] = [];
    const stream: number[] = [];
    const copy: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const dir = (kind: string) => join(work, `${kind}-${run}`);
      await Promise.all(['stream', 'skopeo', 'skopeo-out'].map((kind) => mkdir(dir(kind))));
      const measureOci = async () => {
        // The layer is a payload, not a backend that serves: the figure is the fetch and the swap, without a smoke start.
        oci.push(
          await timed(async () => {
            const done = await client.waitJob({ node: 'local', id: (await client.install({ node: 'local', name: `big-${run}`, smokeStart: false })).id });
            if (done.state !== 'done') throw new Error(`install big-${run} ${done.state}: ${done.error}`);
          }),
        );
      };
      const measureStream = async () => {
        const sum = join(dir('stream'), '..', `stream-${run}.sha256`);
        stream.push(
          await timed(async () => {
            const digest = await bashOutput(`curl -sf "${blobUrl}" | tee >(openssl dgst -sha256 -r > "${sum}") | pigz -dc | tar -x -C "${dir('stream')}" && wait $! && cut -d" " -f1 "${sum}"`);
            if (`sha256:${digest}` !== layer.digest) throw new Error(`the floor read ${digest}, not ${layer.digest}`);
          }),
        );
      };
      const measureSkopeo = async () => {
        const image = `docker://${registry.host}/bench/big:v1`;
        const layerFile = `${dir('skopeo')}/${layer.digest.replace('sha256:', '')}`;
        copy.push(await timed(() => shell(`skopeo copy -q --src-tls-verify=false ${image} dir:${dir('skopeo')} && gzip -dc ${layerFile} | tar -x -C "${dir('skopeo-out')}"`)));
      };
      await inTurns(run, skopeo ? [measureOci, measureStream, measureSkopeo] : [measureOci, measureStream]);
    }
    client.close();
    agent.child.kill('SIGTERM');
    const [ociMs, streamMs] = [median(oci), median(stream)];
    const mb = (layer.size / 1024 ** 2).toFixed(0);
    const figures: BenchFigure[] = [
      {
        name: 'oci_pull_vs_tar_ratio',
        value: ociMs / streamMs,
        unit: 'x',
        goal: 1.1,
        note: `${mb} MB layer: install through the built agent ${ociMs.toFixed(0)} ms vs curl | tee >(openssl dgst -sha256) | pigz -dc | tar -x ${streamMs.toFixed(0)} ms (medians of ${RUNS}, in turns; the rounds' own ratios ${ratioSpread(oci, stream)})`,
      },
    ];
    if (skopeo) {
      const copyMs = median(copy);
      figures.push({ name: 'oci_pull_vs_skopeo_ratio', value: ociMs / copyMs, unit: 'x', goal: 1.1, note: `the agent's install vs skopeo copy + gzip -dc | tar -x ${copyMs.toFixed(0)} ms` });
    } else {
      process.stderr.write('bench: oci_pull_vs_skopeo_ratio NOT MEASURED: skopeo is not installed (apt-get install skopeo)\n');
    }
    return figures;
  } finally {
    await registry.stop();
    await rm(work, { recursive: true, force: true });
  }
}
