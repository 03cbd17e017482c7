// What a user waits for when installing, measured on the built agent (as users run it), against a fair floor in
// the same run: one pass that hashes and extracts together with the fastest common tools,
// `tee >(openssl dgst -sha256) < FILE | pigz -dc | tar -x`, since Hangar verifies the sha256 while it extracts (the
// floor's digest is checked too); the two take turns going first. coreutils' sha256sum and GNU gzip (tar -z) take
// three to four times as long per GiB as OpenSSL's sha256 and zlib's inflate, which Hangar uses.
// Payloads: a mixed, compressible ~200 MB tree with 1,000+ files; ~200 MB of random bytes; 2,000 and 50,000 small
// files. The 50,000 go to an agent of their own, whose first install is reported apart (install_50k_first_ms).
// Every run writes a fresh directory and nothing is deleted until the end, the payloads' own trees neither: ext4 without
// a journal (this disk) gives no new file an inode freed in the last minute (five, while its inode table is unwritten),
// so after a large delete every file created searches past the freed ones. Deleting the 50,000-file tree after making
// its archive made the first install of it 2.7 times as long as the next ones.
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
import { inTurns, median, ratioSpread, type BenchFigure } from './figure.ts';

const MiB = 1024 * 1024;
const RUNS = 5;
const SWAPS = 60;
/** A fresh agent's first install may cost this much more than the ones after it (code not yet optimized, a heap still growing). */
const FIRST_GOAL = 1.25;

interface Payload {
  name: string;
  figure: string;
  goal: number;
  what: string;
  make(dir: string): Promise<void>;
  /** Measured in an agent of its own, whose first install is this figure, apart from the rounds after it. */
  firstFigure?: string;
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
  { name: 'small', figure: 'install_small_files_ratio', goal: 1.2, what: '2,000 small files', make: (dir) => manySmallFiles(dir, 2_000) },
  {
    name: 'python',
    figure: 'install_50k_files_ratio',
    goal: 1.2,
    what: '50,000 small files (a Python backend)',
    make: (dir) => manySmallFiles(dir, 50_000),
    firstFigure: 'install_50k_first_ms',
  },
];

/** The floor: hash and extract in one pass; throws unless the digest is the archive's. */
function oneTarPass(path: string, out: string, sha256: string): void {
  const script = 'set -o pipefail; tee >(openssl dgst -sha256 -r > "$3") < "$1" | pigz -dc | tar -x -C "$2" && wait $! && cut -d" " -f1 "$3"';
  const digest = execFileSync('bash', ['-c', script, 'bash', path, out, `${out}.sha256`], { encoding: 'utf8' }).trim();
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
  const size = Number(execFileSync('stat', ['-c', '%s', path], { encoding: 'utf8' }));
  return { path, sha256: await sha256Of(path), bytes: size };
}

/** Started as users start it: `hangar agent` chooses the agent's V8 flags. */
async function startAgent(home: string, gallery: string) {
  const child = spawn('bin/hangar.js', ['agent', '--home', home, '--gallery', gallery, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const line = (await once(createInterface({ input: child.stdout }), 'line'))[0] as string;
  const url = /listening on (\S+)/.exec(line)![1]!;
  const client = await connect({ home, node: url });
  return {
    client,
    home,
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
  const entries = payloads.flatMap((p) => {
    const names = Array.from({ length: RUNS }, (_, run) => `${p.name}-${run}`);
    if (p.firstFigure) names.push(`${p.name}-first`);
    return names.map((name) => `- name: ${name}\n  uri: ${archives.get(p.name)!.path}\n  sha256: ${archives.get(p.name)!.sha256}\n`);
  });
  const gallery = join(root, 'index.yaml');
  await writeFile(gallery, entries.join(''));
  // Making the payloads wrote (and deleted) their trees: that is written back first, or the first rounds pay for it.
  execFileSync('sync');
  let agent = await startAgent(join(root, 'home'), gallery);
  const figures: BenchFigure[] = [];
  try {
    for (const payload of payloads) {
      const { path, bytes, sha256 } = archives.get(payload.name)!;
      let first: number | null = null;
      if (payload.firstFigure) {
        await agent.stop();
        agent = await startAgent(join(root, `home-${payload.name}`), gallery);
        first = await timedInstall(agent.client, `${payload.name}-first`);
      }
      const ours: number[] = [];
      const floor: number[] = [];
      for (let run = 0; run < RUNS; run++) {
        // Beside the agent's backends directory: new files there get inodes from the same part of the disk.
        const out = join(agent.home, 'floor', `${payload.name}-${run}`);
        await mkdir(out, { recursive: true });
        const measureFloor = () => floor.push(timedSync(() => oneTarPass(path, out, sha256)));
        const measureOurs = async () => void ours.push(await timedInstall(agent.client, `${payload.name}-${run}`));
        await inTurns(run, [measureFloor, measureOurs]);
      }
      figures.push({
        name: payload.figure,
        value: median(ours) / median(floor),
        unit: 'x',
        goal: payload.goal,
        note: `install through the built agent ${median(ours).toFixed(0)} ms vs tee >(openssl dgst -sha256) | pigz -dc | tar -x ${median(floor).toFixed(0)} ms; ${payload.what}, ${(bytes / MiB).toFixed(bytes < MiB ? 2 : 0)} MiB .tar.gz, median of ${RUNS}${first === null ? '' : ' after the first'}; the rounds' own ratios ${ratioSpread(ours, floor)}`,
      });
      if (payload.firstFigure && first !== null) {
        figures.push({
          name: payload.firstFigure,
          value: first,
          unit: 'ms',
          goal: FIRST_GOAL * median(ours),
          note: `the first install in a fresh agent, ${payload.what}; the ${RUNS} after it: median ${median(ours).toFixed(0)} ms (goal ${FIRST_GOAL}x that)`,
        });
      }
    }
  } finally {
    await agent.stop();
  }
  return figures;
}

/** Request to job done. The tree is a payload, not a backend that serves: the figure is the fetch and the swap, without a smoke start. */
async function timedInstall(client: Awaited<ReturnType<typeof connect>>, name: string): Promise<number> {
  const start = performance.now();
  const job = await client.install({ node: 'local', name, smokeStart: false });
  const done = await client.waitJob({ node: 'local', id: job.id });
  if (done.state !== 'done') throw new Error(`install ${name} ${done.state}: ${done.error}`);
  return performance.now() - start;
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
