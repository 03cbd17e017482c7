// The agent as users run it (the built bundle, started by plain `node`: no V8 flags, as the app's main process and
// `node bin/hangar.js agent` run it):
// - agent_rss_mb: resident memory when idle on the starter gallery, and with LocalAI's real index loaded, in an agent
//   restarted on its home and in the home's first agent, which parsed the YAML;
// - gallery_first_ms: the first gallery() on LocalAI's index in a fresh home, from the agent's start through a
//   client's connection to the parsed reply, as a user starting Hangar for the first time meets it;
// - first_load_ms: the first load in a fresh agent (it warms what a load needs on an idle turn once it listens),
//   against a second load of another model in the same agent.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { connect } from '../electron/agent/connect.ts';
import { median, type BenchFigure } from './figure.ts';

const LOCALAI_INDEX = join(import.meta.dirname, 'fixtures', 'localai-backend-index.yaml');
const SETTLE_MS = 3000;
const AGENTS = 5;
/** A fresh agent waits this long, as a user's would before a first load, so its warm-up can run. */
const IDLE_MS = 500;

/** The process's resident memory now (VmRSS), or the most it has held (VmHWM). */
async function rssMb(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1]) / 1024;
}

/** Plain `node` (how the figures are taken), or `hangar agent` through bin/hangar.js, whose sh line adds a V8 flag. */
type Start = 'node' | 'launcher';

/** Runs `work` on a fresh agent, in a fresh home unless `kept` names one that an earlier agent used. */
async function withAgent<T>(
  galleries: string[],
  work: (pid: number, url: string, home: string, spawnedAt: number) => Promise<T>,
  { kept, start = 'node' }: { kept?: string; start?: Start } = {},
): Promise<T> {
  const home = kept ?? (await mkdtemp(join(tmpdir(), 'hangar-bench-agent-')));
  const args = ['agent', '--home', home, '--listen', '127.0.0.1:0', ...galleries.flatMap((g) => ['--gallery', g])];
  const [command, ...argv] = start === 'node' ? [process.execPath, 'dist/agent/cli.js', ...args] : ['bin/hangar.js', ...args];
  const spawnedAt = performance.now();
  const child = spawn(command!, argv, { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const line = (await once(createInterface({ input: child.stdout }), 'line'))[0] as string;
    return await work(child.pid!, /listening on (\S+)/.exec(line)![1]!, home, spawnedAt);
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
    if (!kept) await rm(home, { recursive: true, force: true });
  }
}

async function idleStarter(start: Start): Promise<number> {
  return withAgent(
    [],
    async (pid) => {
      await delay(SETTLE_MS);
      return rssMb(pid);
    },
    { start },
  );
}

/** In `home`: fresh for a first agent, or where one ran before and kept the parse, as a restarted agent finds it. */
async function localAiIndex(home: string): Promise<{ rss: number; peak: number; firstMs: number; fromStartMs: number; replyKiB: number }> {
  return withAgent([LOCALAI_INDEX], async (pid, url, _home, spawnedAt) => {
    const start = performance.now();
    const client = await connect({ home, node: url });
    try {
      const entries = await client.gallery({ node: 'local' });
      const firstMs = performance.now() - start;
      const fromStartMs = performance.now() - spawnedAt;
      if (entries.length < 800) throw new Error(`LocalAI's index listed ${entries.length} entries, not its ~900`);
      const peak = await rssMb(pid, 'VmHWM');
      await delay(SETTLE_MS);
      return { rss: await rssMb(pid), peak, firstMs, fromStartMs, replyKiB: Buffer.byteLength(JSON.stringify(entries)) / 1024 };
    } finally {
      client.close();
    }
  }, { kept: home });
}

async function firstLoad(): Promise<{ first: number; second: number }> {
  return withAgent([], async (_pid, url, home) => {
    const client = await connect({ home, node: url });
    try {
      const job = await client.install({ node: 'local', name: 'echo' });
      await client.waitJob({ node: 'local', id: job.id });
      await delay(IDLE_MS);
      const timed = async (model: string) => {
        const start = performance.now();
        await client.load({ node: 'local', backend: 'echo', model });
        return performance.now() - start;
      };
      return { first: await timed('first'), second: await timed('second') };
    } finally {
      client.close();
    }
  });
}

export default async function (): Promise<BenchFigure[]> {
  await access(LOCALAI_INDEX).catch(() => {
    throw new Error(`bench: ${LOCALAI_INDEX} is missing: gallery_first_ms and agent_rss_localai_mb need LocalAI's index`);
  });
  const idle: number[] = [];
  const idleLauncher: number[] = [];
  const firsts: Awaited<ReturnType<typeof localAiIndex>>[] = [];
  const loaded: Awaited<ReturnType<typeof localAiIndex>>[] = [];
  const loads: Awaited<ReturnType<typeof firstLoad>>[] = [];
  for (let i = 0; i < AGENTS; i++) {
    idle.push(await idleStarter('node'));
    idleLauncher.push(await idleStarter('launcher'));
    // A home's first agent parses LocalAI's index and keeps the parse; the next one, restarted there, reads it back.
    const home = await mkdtemp(join(tmpdir(), 'hangar-bench-agent-'));
    try {
      firsts.push(await localAiIndex(home));
      loaded.push(await localAiIndex(home));
    } finally {
      await rm(home, { recursive: true, force: true });
    }
    loads.push(await firstLoad());
  }
  const reply = loaded[0]!.replyKiB.toFixed(0);
  const second = median(loads.map((l) => l.second));
  const restartedMs = median(loaded.map((l) => l.firstMs));
  return [
    { name: 'agent_rss_mb', value: median(idle), unit: 'MB', goal: 80, note: `VmRSS of an idle agent on the starter gallery (warmed up), ${SETTLE_MS / 1000} s after ready, median of ${AGENTS}; \`hangar agent\` through bin/hangar.js (--max-semi-space-size=2): ${median(idleLauncher).toFixed(1)} MB` },
    { name: 'agent_rss_localai_mb', value: median(loaded.map((l) => l.rss)), unit: 'MB', goal: 100, note: `VmRSS with LocalAI's real index loaded, in an agent restarted on its home (the parse read back), ${SETTLE_MS / 1000} s after the first gallery(), median of ${AGENTS}` },
    { name: 'agent_rss_localai_first_mb', value: median(firsts.map((l) => l.rss)), unit: 'MB', goal: 100, note: `the same in a home's first agent, which parsed the YAML (in a worker thread), median of ${AGENTS}` },
    { name: 'agent_rss_localai_parse_peak_mb', value: median(firsts.map((l) => l.peak)), unit: 'MB', goal: 100, note: `the most a home's first agent held (VmHWM) by the end of its first gallery(), the parse included, median of ${AGENTS}` },
    {
      name: 'first_load_ms',
      value: median(loads.map((l) => l.first)),
      unit: 'ms',
      goal: 1.3 * second,
      note: `the first load in a fresh agent ${IDLE_MS} ms after its install; a second model's load in the same agent ${second.toFixed(0)} ms (goal 1.3x); median of ${AGENTS} agents`,
    },
    { name: 'gallery_first_ms', value: median(firsts.map((l) => l.fromStartMs)), unit: 'ms', goal: 400, note: `first gallery() on LocalAI's index (bench/fixtures) in a home that never parsed it, from the agent's start (its spawn) through a new client's connection to the parsed reply (${reply} KiB), median of ${AGENTS}; in an agent restarted there (the parse kept), from its "listening" line: ${restartedMs.toFixed(0)} ms` },
  ];
}
