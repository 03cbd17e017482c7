// restart_vs_pm2_ratio, restart_quick_vs_pm2_ratio and restart_quick2_vs_pm2_ratio: kill -9 of a backend -> Health OK
// again, the built agent (run as users run it, in its own process) against PM2 (the npm package, its own daemon in a
// temporary PM2_HOME) restarting the same run.sh, interleaved, with the same gRPC probe for both, taking turns going
// first. Each round kills a process that served longer than the restart rule's quick window, then the one that replaced
// it a second after it answered, then its replacement the same way (the second quick end in a row): all restart at
// once, as PM2 does; the backoff starts only at a third quick end.
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { startAgent } from '../e2e/fixtures/agent.ts';
import { connect } from '../electron/agent/connect.ts';
import { serializeMetadata } from '../electron/core/install/metadata.ts';
import { DEFAULT_RESTART_RULES } from '../electron/core/supervisor/restart-policy.ts';
import { BackendClient } from '../electron/core/supervisor/grpc-client.ts';
import { freePort } from '../electron/core/supervisor/test-helpers.ts';
import { BUILT_ECHO } from '../electron/core/testing/fixtures.ts';
import type { NodeEvent } from '../shared/types.ts';
import { inTurns, median, type BenchFigure } from './figure.ts';

const ROUNDS = 7;
const SETTLE_MS = 1000;
const PROBE_EVERY_MS = 2;

/** Health OK from whatever `address()` names now, asked every few ms; the time it took from `since`. */
async function healthyAgain(address: () => string | null, since: number): Promise<number> {
  let client: BackendClient | null = null;
  let at: string | null = null;
  try {
    for (;;) {
      const now = address();
      if (now !== at) {
        client?.close();
        client = now === null ? null : new BackendClient(now);
        at = now;
      }
      if (client && (await client.health(200).catch(() => null)) === 'OK') return performance.now() - since;
      if (performance.now() - since > 60_000) throw new Error(`no Health OK from ${at} within 60 s`);
      await delay(PROBE_EVERY_MS);
    }
  } finally {
    client?.close();
  }
}

interface Pm2 {
  connect(noDaemon: boolean, cb: (err: Error | null) => void): void;
  start(options: object, cb: (err: Error | null) => void): void;
  describe(name: string, cb: (err: Error | null, list: { pid: number }[]) => void): void;
  delete(name: string, cb: (err: Error | null) => void): void;
  killDaemon(cb: (err: Error | null) => void): void;
  disconnect(): void;
}

/** PM2's API (CommonJS, callbacks) as promises; its daemon keeps its files in `home`. */
async function pm2In(home: string) {
  process.env.PM2_HOME = home;
  const pm2 = createRequire(import.meta.url)('pm2') as Pm2;
  const call = <T>(fn: (cb: (err: Error | null, value?: T) => void) => void) =>
    new Promise<T>((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value as T))));
  await call((cb) => pm2.connect(false, cb));
  return {
    start: (options: object) => call((cb) => pm2.start(options, cb)),
    pid: async (name: string) => (await call<{ pid: number }[]>((cb) => pm2.describe(name, cb)))[0]?.pid ?? 0,
    async stop() {
      await call((cb) => pm2.delete('all', cb)).catch(() => undefined);
      await call((cb) => pm2.killDaemon(cb)).catch(() => undefined);
      pm2.disconnect();
    },
  };
}

export default async function (): Promise<BenchFigure[]> {
  const root = await mkdtemp(join(tmpdir(), 'hangar-bench-restart-'));
  const dir = join(root, 'home', 'backends', 'echo');
  await cp(BUILT_ECHO, dir, { recursive: true });
  const meta = { name: 'echo', alias: null, metaBackendFor: null, galleryUrl: null, installedAt: new Date().toISOString(), version: '1.0.0', uri: null, digest: null, sha256: null };
  await writeFile(join(dir, 'metadata.json'), serializeMetadata(meta));
  // The agent as users run it: its own process, driven over its WebSocket.
  const agent = await startAgent({ home: join(root, 'home') });
  const client = await connect({ node: agent.url, home: agent.home });
  const pm2 = await pm2In(join(root, 'pm2'));
  try {
    const pm2Port = await freePort();
    await pm2.start({ name: 'echo', script: join(dir, 'run.sh'), args: ['--addr', `127.0.0.1:${pm2Port}`], interpreter: 'none', cwd: dir, env: { HANGAR_NODE: process.execPath }, autorestart: true });
    await client.load({ node: 'local', backend: 'echo', model: 'm1' });
    const hangarProcess = async () => (await client.processes({ node: 'local' })).find((p) => p.model === 'm1');
    // Where the model's process listens, from the agent's own events (a restart may take another port).
    let hangarAddress: string | null = `127.0.0.1:${(await hangarProcess())!.port}`;
    const off = client.onEvent((event: NodeEvent) => {
      if (event.type === 'process' && event.process.model === 'm1') hangarAddress = event.process.exit ? null : `127.0.0.1:${event.process.port}`;
    });
    const lasted = { ours: [] as number[], theirs: [] as number[] };
    const quick = { ours: [] as number[], theirs: [] as number[] };
    const quick2 = { ours: [] as number[], theirs: [] as number[] };
    // A kill after a run that lasted, then two soon after the restart each caused: all restart at once, as PM2.
    const pm2Crashes = async () => {
      for (const into of [lasted.theirs, quick.theirs, quick2.theirs]) {
        const start = performance.now();
        process.kill(await pm2.pid('echo'), 'SIGKILL');
        into.push(await healthyAgain(() => `127.0.0.1:${pm2Port}`, start));
        await delay(SETTLE_MS);
      }
    };
    const hangarCrashes = async () => {
      for (const into of [lasted.ours, quick.ours, quick2.ours]) {
        while ((await hangarProcess())?.state !== 'ready') await delay(PROBE_EVERY_MS);
        const victim = (await hangarProcess())!.pid;
        const start = performance.now();
        process.kill(victim, 'SIGKILL');
        into.push(await healthyAgain(() => hangarAddress, start));
        await delay(SETTLE_MS);
      }
    };
    try {
      await healthyAgain(() => `127.0.0.1:${pm2Port}`, performance.now());
      for (let round = 0; round < ROUNDS; round++) {
        // Both have served longer than the quick window: the first kill is a crash after a healthy run.
        await delay(DEFAULT_RESTART_RULES.quickMs + 200);
        await inTurns(round, [pm2Crashes, hangarCrashes]);
      }
    } finally {
      off();
    }
    const figure = (name: string, runs: { ours: number[]; theirs: number[] }, what: string): BenchFigure => {
      const [ourMs, theirMs] = [median(runs.ours), median(runs.theirs)];
      return {
        name,
        value: ourMs / theirMs,
        unit: 'x',
        goal: 1.1,
        note: `${what} -> Health OK: Hangar ${ourMs.toFixed(0)} ms vs PM2 ${theirMs.toFixed(0)} ms, the agent in its own process, same run.sh and probe, taking turns going first, median of ${ROUNDS}`,
      };
    };
    return [
      figure('restart_vs_pm2_ratio', lasted, `kill -9 after ${DEFAULT_RESTART_RULES.quickMs / 1000} s serving`),
      figure('restart_quick_vs_pm2_ratio', quick, `kill -9 ${SETTLE_MS / 1000} s after that restart`),
      figure('restart_quick2_vs_pm2_ratio', quick2, `kill -9 ${SETTLE_MS / 1000} s after the next restart (the second quick end in a row)`),
    ];
  } finally {
    client.close();
    await pm2.stop();
    await agent.kill();
    await rm(root, { recursive: true, force: true });
  }
}
