// 100,000 small files (Python-sized, a hundred to a package) installed from every source, each against the plain
// tools doing the same copy in the same run, the fastest common ones: a local folder against `cp -a`; a local
// .tar.gz against `tee >(openssl dgst -sha256) < F | pigz -dc | tar -x` (Hangar verifies the sha256 while it
// extracts); http and OCI against `curl URL | pigz -dc | tar -x`. Installs go through installBackend, the guarded
// fetch and a real registry.
// Nothing is deleted until the end: deleting a large tree slows the next writes on this disk for a while (a run that
// deleted each round's trees took 26 s for a `cp -a` that takes 4). The floor and the install take turns going first.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installBackend } from '../electron/core/install/install.ts';
import { BackendStore } from '../electron/core/install/store.ts';
import { tarGzOf } from '../electron/core/install/testdata/big-files.ts';
import { startSourceRig, type ArchiveSource } from '../electron/core/install/testdata/every-source.ts';
import { writeSmallFiles } from '../electron/core/install/testdata/legit-tree.ts';
import { bash, inTurns, median, shell, timed, type BenchFigure } from './figure.ts';

const FILES = 100_000;
const GOAL = 2;
const RUNS = 5;

export default async function (): Promise<BenchFigure[]> {
  const work = await mkdtemp(join(tmpdir(), 'hangar-many-files-bench-'));
  const rig = await startSourceRig();
  try {
    const tree = join(work, 'tree');
    writeSmallFiles(join(tree, 'site-packages'), FILES);
    await writeFile(join(tree, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    const archive = await tarGzOf(tree, ['run.sh', 'site-packages'], join(work, 'many.tar.gz'));
    const uris = await rig.publish('many', archive);
    // Making the tree wrote 100,000 files: that is written back first, or the first rounds pay for it.
    await shell('sync');
    const blobUrl = uris.oci.replace(/^([^/]+)\/(.+):v1$/, `http://$1/v2/$2/blobs/${archive.digest}`);
    const store = new BackendStore(join(work, 'backends'));
    const install = (name: string, uri: string) =>
      timed(() => installBackend(store, { name, uris: [uri], sourceOptions: { baseDir: null, baseUrl: null }, ...rig.request }));
    const cases: { source: 'dir' | ArchiveSource; uri: string; floor: string; run(dir: string): Promise<void> }[] = [
      { source: 'dir', uri: tree, floor: 'cp -a', run: (dir) => shell(`cp -a "${tree}/." "${dir}"`) },
      {
        source: 'local .tar.gz',
        uri: uris['local .tar.gz'],
        floor: 'tee >(openssl dgst -sha256) | pigz -dc | tar -x',
        run: (dir) => bash(`tee >(openssl dgst -sha256 > /dev/null) < "${archive.data.path}" | pigz -dc | tar -x -C "${dir}"`),
      },
      { source: 'http', uri: uris.http, floor: 'curl | pigz -dc | tar -x', run: (dir) => bash(`curl -sf "${uris.http}" | pigz -dc | tar -x -C "${dir}"`) },
      { source: 'oci', uri: uris.oci, floor: 'curl blob | pigz -dc | tar -x', run: (dir) => bash(`curl -sf "${blobUrl}" | pigz -dc | tar -x -C "${dir}"`) },
    ];
    const figures: BenchFigure[] = [];
    for (const [i, c] of cases.entries()) {
      const ours: number[] = [];
      const floor: number[] = [];
      for (let run = 0; run < RUNS; run++) {
        const floorDir = join(work, 'floor', `${i}-${run}`);
        await mkdir(floorDir, { recursive: true });
        const name = `many-${i}-${run}`;
        const measureFloor = async () => void floor.push(await timed(() => c.run(floorDir)));
        const measureOurs = async () => void ours.push(await install(name, c.uri));
        await inTurns(run, [measureFloor, measureOurs]);
      }
      figures.push({
        name: `install_100k_files_${c.source.replace(/[^a-z]+/g, '_').replace(/^_|_$/g, '')}_ratio`,
        value: median(ours) / median(floor),
        unit: 'x',
        goal: GOAL,
        note: `${FILES.toLocaleString('en')} small files from ${c.source}: install ${(median(ours) / 1000).toFixed(1)} s vs ${c.floor} ${(median(floor) / 1000).toFixed(1)} s, median of ${RUNS}`,
      });
    }
    return figures;
  } finally {
    await rig.close();
    await rm(work, { recursive: true, force: true });
  }
}
