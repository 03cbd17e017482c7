// restart_vs_pm2_ratio: kill -9 of a backend that has been serving a while -> Health OK again, Hangar's restart policy
// against PM2 (the npm package, its own daemon in a temporary PM2_HOME) restarting the same run.sh, interleaved, with
// the same gRPC probe for both, taking turns going first. A kill comes only after the process ran longer than the
// restart rule's quick window, so both restart at once, as PM2 does by default; a kill soon after a restart shows
// Hangar's backoff.
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { serializeMetadata } from '../electron/core/install/metadata.ts';
import { LocalNode } from '../electron/core/node.ts';
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
  const node = new LocalNode({ home: join(root, 'home'), galleries: [], runtimeEnv: { HANGAR_NODE: process.execPath }, capability: 'default' });
  await node.start();
  const pm2 = await pm2In(join(root, 'pm2'));
  try {
    const pm2Port = await freePort();
    await pm2.start({ name: 'echo', script: join(dir, 'run.sh'), args: ['--addr', `127.0.0.1:${pm2Port}`], interpreter: 'none', cwd: dir, env: { HANGAR_NODE: process.execPath }, autorestart: true });
    await node.load({ node: 'local', backend: 'echo', model: 'm1' });
    const hangarProcess = async () => (await node.processes({ node: 'local' })).find((p) => p.model === 'm1');
    // Where the model's process listens, from the node's own events (a restart may take another port).
    let hangarAddress: string | null = null;
    const track = (event: NodeEvent) => {
      if (event.type === 'process' && event.process.model === 'm1') hangarAddress = event.process.exit ? null : `127.0.0.1:${event.process.port}`;
    };
    node.on('event', track);
    const ours: number[] = [];
    const theirs: number[] = [];
    const again: number[] = [];
    const pm2Crash = async () => {
      const start = performance.now();
      process.kill(await pm2.pid('echo'), 'SIGKILL');
      theirs.push(await healthyAgain(() => `127.0.0.1:${pm2Port}`, start));
    };
    const hangarCrash = async () => {
      const victim = (await hangarProcess())!.pid;
      const start = performance.now();
      process.kill(victim, 'SIGKILL');
      ours.push(await healthyAgain(() => hangarAddress, start));
    };
    try {
      await healthyAgain(() => `127.0.0.1:${pm2Port}`, performance.now());
      for (let round = 0; round < ROUNDS; round++) {
        // Both have served longer than the quick window: this is a crash after a healthy run.
        await delay(DEFAULT_RESTART_RULES.quickMs + 200);
        // Each waits for the other's fresh process to settle too: a backend that has just answered Health is still
        // busy, and would slow whatever starts beside it.
        await inTurns(round, [pm2Crash, hangarCrash].map((crash) => () => crash().then(() => delay(SETTLE_MS))));
      }
      // A crash soon after a restart (Hangar's process last started a second or two ago): the backoff applies.
      while ((await hangarProcess())?.state !== 'ready') await delay(PROBE_EVERY_MS);
      const second = (await hangarProcess())!.pid;
      const start = performance.now();
      process.kill(second, 'SIGKILL');
      again.push(await healthyAgain(() => hangarAddress, start));
    } finally {
      node.off('event', track);
    }
    const [ourMs, theirMs] = [median(ours), median(theirs)];
    return [
      {
        name: 'restart_vs_pm2_ratio',
        value: ourMs / theirMs,
        unit: 'x',
        goal: 1.2,
        note: `kill -9 after ${DEFAULT_RESTART_RULES.quickMs / 1000} s serving -> Health OK: Hangar ${ourMs.toFixed(0)} ms vs PM2 ${theirMs.toFixed(0)} ms, same run.sh and probe, taking turns going first, median of ${ROUNDS}; a kill within the quick window of a restart: ${again[0]!.toFixed(0)} ms (the ${DEFAULT_RESTART_RULES.baseMs} ms backoff)`,
      },
    ];
  } finally {
    await pm2.stop();
    await node.close({ stopBackends: true });
    await rm(root, { recursive: true, force: true });
  }
}
