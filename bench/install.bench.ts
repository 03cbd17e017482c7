// Install path vs `tar -xzf` on a ~200 MB backend tarball, and the cost of the swap itself (two renames).
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdtempSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { installBackend } from '../electron/core/install/install.ts';
import { builtinSources } from '../electron/core/install/sources.ts';
import { BackendStore } from '../electron/core/install/store.ts';
import { median, type BenchFigure } from './figure.ts';

const MiB = 1024 * 1024;
const RUNS = 3;
const SWAPS = 60;

async function makeBackendTree(dir: string): Promise<void> {
  await mkdir(join(dir, 'lib', 'small'), { recursive: true });
  await writeFile(join(dir, 'run.sh'), '#!/bin/sh\nexec ./bin/backend "$@"\n', { mode: 0o755 });
  for (let i = 0; i < 4; i++) {
    const chunks = Array.from({ length: 48 }, () => randomBytes(MiB));
    await writeFile(join(dir, 'lib', `weights-${i}.bin`), Buffer.concat(chunks));
  }
  for (let i = 0; i < 300; i++) await writeFile(join(dir, 'lib', 'small', `file-${i}.py`), `# module ${i}\n`.repeat(50 + i));
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function timeIt(work: () => Promise<unknown> | unknown): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

async function installVsTar(root: string): Promise<BenchFigure> {
  const tree = join(root, 'tree');
  await makeBackendTree(tree);
  const archive = join(root, 'backend.tar.gz');
  execFileSync('tar', ['-czf', archive, '-C', tree, '.']);
  await rm(tree, { recursive: true });
  const sha256 = await sha256Of(archive);
  const ours: number[] = [];
  const theirs: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const out = join(root, `tar-${run}`);
    await mkdir(out);
    theirs.push(await timeIt(() => execFileSync('tar', ['-xzf', archive, '-C', out])));
    await rm(out, { recursive: true });
    const store = new BackendStore(join(root, `backends-${run}`));
    ours.push(
      await timeIt(() =>
        installBackend(store, { name: 'big', uris: [archive], sha256, factories: builtinSources, sourceOptions: { baseDir: null, baseUrl: null } }),
      ),
    );
    await rm(store.dir, { recursive: true });
  }
  const ratio = median(ours) / median(theirs);
  return {
    name: 'install_vs_tar_ratio',
    value: ratio,
    unit: 'x',
    goal: 1.15,
    note: `full install ${median(ours).toFixed(0)} ms (sha256 checked) vs tar -xzf ${median(theirs).toFixed(0)} ms, ~200 MB .tar.gz, median of ${RUNS}`,
  };
}

async function swapMs(root: string): Promise<BenchFigure> {
  const store = new BackendStore(join(root, 'swap'));
  const samples: number[] = [];
  for (let i = 0; i < SWAPS; i++) {
    const staged = await store.stage('small');
    await writeFile(join(staged, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    await writeFile(join(staged, 'VERSION'), String(i));
    let start = 0;
    const swap = await store.commit('small', staged, {
      beforeSwap: async () => void (start = performance.now()),
      onStep: (step) => {
        if (step === 'live-renamed' && start > 0) samples.push(performance.now() - start);
      },
    });
    await swap.settle();
  }
  return { name: 'swap_ms', value: median(samples), unit: 'ms', goal: 5, note: `backup rename + live rename, median of ${samples.length} commits` };
}

export default async function (): Promise<BenchFigure[]> {
  const root = mkdtempSync(join(tmpdir(), 'hangar-bench-install-'));
  try {
    return [await installVsTar(root), await swapMs(root)];
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
