// What a user waits for when installing, measured on the built agent (as users run it), against a fair floor in
// the same run: one pass that hashes and extracts together, `tee >(sha256sum) < FILE | tar -xz`, since Hangar
// verifies the sha256 while it extracts (the floor's digest is checked too); the two take turns going first.
// Payloads: a mixed, compressible ~200 MB tree with 1,000+ files; ~200 MB of random bytes; 2,000 and 50,000 small
// files.
// Every run writes a fresh directory and nothing is deleted until the end: deleting a large tree makes the next
// writes on this disk slow for a while, which would measure the disk rather than the installer.
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, mkdtempSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { connect } from '../electron/agent/connect.ts';
import { BackendStore } from '../electron/core/install/store.ts';
import { inTurns, median, type BenchFigure } from './figure.ts';

const MiB = 1024 * 1024;
const RUNS = 5;
const SWAPS = 60;

interface Payload {
  name: string;
  figure: string;
  goal: number;
  what: string;
  make(dir: string): Promise<void>;
}

/** Model weights are poorly compressible; python sources and configs compress well. */
async function mixedTree(dir: string): Promise<void> {
  await mkdir(join(dir, 'lib'), { recursive: true });
  const text = Buffer.from('def forward(self, x):\n    return self.layer(x) + x  # residual\n'.repeat(12_000)).subarray(0, 768 * 1024);
  for (let i = 0; i < 4; i++) {
    const chunks = Array.from({ length: 45 }, () => Buffer.concat([randomBytes(256 * 1024), text]));
    await writeFile(join(dir, 'lib', `weights-${i}.bin`), Buffer.concat(chunks));
  }
  await manySmallFiles(join(dir, 'site-packages'), 1_200);
}

async function randomTree(dir: string): Promise<void> {
  await mkdir(join(dir, 'lib'), { recursive: true });
  for (let i = 0; i < 4; i++) await writeFile(join(dir, 'lib', `blob-${i}.bin`), randomBytes(50 * MiB));
}

/** Source files of 0.5 to 6 KiB that compress about as well as real Python does (a few times, not a hundred). */
async function manySmallFiles(dir: string, count: number): Promise<void> {
  for (let d = 0; d < count / 50; d++) {
    await mkdir(join(dir, `pkg${d}`), { recursive: true });
    for (let i = 0; i < 50; i++) {
      const lines = 10 + ((d * 50 + i) % 100);
      const body = Array.from({ length: lines }, (_, n) => `    value_${n} = compute("${randomBytes(12).toString('base64url')}", ${n})  # step ${n}\n`).join('');
      await writeFile(join(dir, `pkg${d}`, `mod${i}.py`), `# module ${d}.${i}\nimport os\n\ndef run():\n${body}`);
    }
  }
}

const payloads: Payload[] = [
  { name: 'mixed', figure: 'install_vs_tar_ratio', goal: 1.15, what: 'mixed ~200 MB, 1,200 files', make: mixedTree },
  { name: 'random', figure: 'install_random_vs_tar_ratio', goal: 1.15, what: 'random ~200 MB', make: randomTree },
  { name: 'small', figure: 'install_small_files_ratio', goal: 1.3, what: '2,000 small files', make: (dir) => manySmallFiles(dir, 2_000) },
  { name: 'python', figure: 'install_50k_files_ratio', goal: 1.3, what: '50,000 small files (a Python backend)', make: (dir) => manySmallFiles(dir, 50_000) },
];

/** The floor: hash and extract in one pass; throws unless the digest is the archive's. */
function oneTarPass(path: string, out: string, sha256: string): void {
  const digest = execFileSync('bash', ['-c', 'tee >(sha256sum > "$3") < "$1" | tar -xz -C "$2" && wait $! && cut -d" " -f1 "$3"', 'bash', path, out, `${out}.sha256`], {
    encoding: 'utf8',
  }).trim();
  if (digest !== sha256) throw new Error(`the floor hashed ${path} as ${digest}, not ${sha256}`);
}

function timedSync(action: () => void): number {
  const start = performance.now();
  action();
  return performance.now() - start;
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function archive(root: string, payload: Payload): Promise<{ path: string; sha256: string; bytes: number }> {
  const tree = join(root, `tree-${payload.name}`);
  await payload.make(tree);
  await writeFile(join(tree, 'run.sh'), '#!/bin/sh\nexec ./bin/backend "$@"\n', { mode: 0o755 });
  const path = join(root, `${payload.name}.tar.gz`);
  execFileSync('tar', ['-czf', path, '-C', tree, '.']);
  await rm(tree, { recursive: true });
  const size = Number(execFileSync('stat', ['-c', '%s', path], { encoding: 'utf8' }));
  return { path, sha256: await sha256Of(path), bytes: size };
}

async function startAgent(home: string, gallery: string) {
  const child = spawn(process.execPath, ['dist/agent/cli.js', 'agent', '--home', home, '--gallery', gallery, '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const line = (await once(createInterface({ input: child.stdout }), 'line'))[0] as string;
  const url = /listening on (\S+)/.exec(line)![1]!;
  const client = await connect({ home, node: url });
  return {
    client,
    async stop() {
      client.close();
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

async function installsVsTar(root: string): Promise<BenchFigure[]> {
  const archives = new Map<string, Awaited<ReturnType<typeof archive>>>();
  for (const payload of payloads) archives.set(payload.name, await archive(root, payload));
  const entries = payloads.flatMap((p) =>
    Array.from({ length: RUNS }, (_, run) => `- name: ${p.name}-${run}\n  uri: ${archives.get(p.name)!.path}\n  sha256: ${archives.get(p.name)!.sha256}\n`),
  );
  const gallery = join(root, 'index.yaml');
  await writeFile(gallery, entries.join(''));
  const agent = await startAgent(join(root, 'home'), gallery);
  const figures: BenchFigure[] = [];
  try {
    for (const payload of payloads) {
      const { path, bytes, sha256 } = archives.get(payload.name)!;
      const ours: number[] = [];
      const floor: number[] = [];
      for (let run = 0; run < RUNS; run++) {
        const out = join(root, `tar-${payload.name}-${run}`);
        await mkdir(out);
        const measureFloor = () => floor.push(timedSync(() => oneTarPass(path, out, sha256)));
        const measureOurs = async () => {
          const start = performance.now();
          // The tree is a payload, not a backend that serves: the figure is the fetch and the swap, without a smoke start.
          const job = await agent.client.install({ node: 'local', name: `${payload.name}-${run}`, smokeStart: false });
          const done = await agent.client.waitJob({ node: 'local', id: job.id });
          if (done.state !== 'done') throw new Error(`install ${payload.name}-${run} ${done.state}: ${done.error}`);
          ours.push(performance.now() - start);
        };
        await inTurns(run, [measureFloor, measureOurs]);
      }
      figures.push({
        name: payload.figure,
        value: median(ours) / median(floor),
        unit: 'x',
        goal: payload.goal,
        note: `install through the built agent ${median(ours).toFixed(0)} ms vs tee >(sha256sum) | tar -xz ${median(floor).toFixed(0)} ms; ${payload.what}, ${(bytes / MiB).toFixed(bytes < MiB ? 2 : 0)} MiB .tar.gz, median of ${RUNS}`,
      });
    }
  } finally {
    await agent.stop();
  }
  return figures;
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
    return [...(await installsVsTar(root)), await swapMs(root)];
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
