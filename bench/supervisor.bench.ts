// Supervisor figures, measured with real backend processes on loopback:
// - readiness_ms: the backend's port answers -> the supervisor marks it ready;
// - stale_detect_ms: an out-of-band swap of the backend's directory -> the 'process' event saying 'stale';
// - load_to_ready_ms: a model's load request to Health OK, spawn included, beside a bare spawn to Health OK;
// - respawn_overhead_ms: a forced respawn to ready, minus a bare spawn to the first Health OK of the same backend;
// - scan_ms_200: a full scan() with 200 live supervised processes.
// Under HANGAR_PLATFORM=posix each name ends in `_posix`: the same figures, read through the POSIX platform layer.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { LogLine, ProcessView } from '../shared/index.ts';
import { currentPlatform } from '../electron/core/platform/index.ts';
import { Supervisor, type BackendTarget } from '../electron/core/supervisor/supervisor.ts';
import { makeHome, startUpstream, swapOutOfBand, writeEcho, writeRelayBackend } from '../electron/core/supervisor/test-helpers.ts';
import { median, type BenchFigure } from './figure.ts';
import { bareSpawnToHealth } from './spawn-floor.ts';

const RUNS = 15;
/**
 * What a load may add to a bare start. A latency, not a difference: a load starts from a shell forked ahead (the
 * fork and the move into its cgroup paid before the request), so it can come in under a floor that forks.
 */
const LOAD_MARGIN_MS = 30;

export default async function (): Promise<BenchFigure[]> {
  const home = makeHome();
  const upstream = await startUpstream(home.root);
  const echo: BackendTarget = { name: 'echo', dir: join(home.backendsDir, 'echo') };
  const relay: BackendTarget = { name: 'relay', dir: join(home.backendsDir, 'relay') };
  await writeEcho(echo.dir, '1.0.0');
  writeRelayBackend(relay.dir, upstream.address, { announce: true });
  const supervisor = new Supervisor({ ...home, runtimeEnv: { HANGAR_NODE: process.execPath }, portQuarantineMs: 0 });
  await supervisor.start();
  try {
    const readiness = await measureReadiness(supervisor, echo);
    const loads = await measureLoadToReady(supervisor, echo);
    const stale = await measureStaleDetection(supervisor, home.backendsDir, upstream.address);
    const overhead = await measureRespawnOverhead(supervisor, relay);
    const scan = await measureScan(supervisor, relay);
    const layer = currentPlatform().name === 'posix' ? '_posix' : '';
    const figures: BenchFigure[] = [
      {
        name: 'readiness_ms',
        value: median(readiness),
        unit: 'ms',
        goal: 20,
        note: `echo backend: its "listening" line -> marked ready, median of ${RUNS}`,
      },
      {
        name: 'stale_detect_ms',
        value: median(stale),
        unit: 'ms',
        goal: 50,
        note: `first rename of the swap -> 'process' event with cwd stale, median of ${RUNS}`,
      },
      {
        name: 'load_to_ready_ms',
        value: median(loads.load),
        unit: 'ms',
        goal: median(loads.floor) + LOAD_MARGIN_MS,
        note: `echo backend: load request -> Health OK; floor (spawn -> its listening line -> one Health) ${median(loads.floor).toFixed(1)} ms, goal floor + ${LOAD_MARGIN_MS} ms; interleaved, median of ${RUNS}`,
      },
      {
        name: 'respawn_overhead_ms',
        value: median(overhead.respawn) - median(overhead.bare),
        unit: 'ms',
        goal: 30,
        note: `relay backend: respawn ${median(overhead.respawn).toFixed(1)} ms, floor (spawn -> listening line -> one Health) ${median(overhead.bare).toFixed(1)} ms, interleaved`,
      },
      {
        name: 'scan_ms_200',
        value: median(scan.times),
        unit: 'ms',
        goal: 20,
        note: `${scan.supervised} supervised live, ${scan.machine} processes on the machine, median of ${scan.times.length}`,
      },
      {
        name: 'scan_block_ms',
        value: median(scan.blocks),
        unit: 'ms',
        goal: 5,
        note: `the longest the agent's event loop waits during that scan, median of ${scan.blocks.length}`,
      },
    ];
    return figures.map((f) => ({ ...f, name: `${f.name}${layer}` }));
  } finally {
    await supervisor.close({ stopAll: true });
    await upstream.stop();
    home.cleanup();
  }
}

/** When the backend says it listens (its port answers from then on) vs. when the supervisor marks it ready. */
async function measureReadiness(supervisor: Supervisor, echo: BackendTarget): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const model = `ready-${i}`;
    let listening = 0;
    let ready = 0;
    const onLog = (line: LogLine) => {
      if (line.model === model && line.text.includes('listening')) listening = performance.now();
    };
    const onProcess = (view: ProcessView) => {
      if (view.model === model && view.state === 'ready') ready = performance.now();
    };
    supervisor.on('log', onLog).on('process', onProcess);
    await supervisor.ensureRunning(echo, model);
    supervisor.off('log', onLog).off('process', onProcess);
    samples.push(ready - listening);
    await supervisor.stop(model, { force: true });
  }
  return samples;
}

async function measureStaleDetection(supervisor: Supervisor, backendsDir: string, upstream: string): Promise<number[]> {
  const samples: number[] = [];
  const target: BackendTarget = { name: 'swapped', dir: join(backendsDir, 'swapped') };
  writeRelayBackend(target.dir, upstream);
  for (let i = 0; i < RUNS; i++) {
    const model = `stale-${i}`;
    await supervisor.ensureRunning(target, model);
    await delay(50); // let the watcher settle from the spawn
    let renamedAt = 0;
    const stale = new Promise<number>((resolve) => {
      const onProcess = (view: ProcessView) => {
        if (view.model !== model || view.cwd !== 'stale') return;
        supervisor.off('process', onProcess);
        resolve(performance.now() - renamedAt);
      };
      supervisor.on('process', onProcess);
    });
    // Staging happens before the clock starts: the swap is the two renames and the delete.
    await swapOutOfBand(backendsDir, 'swapped', (dir) => {
      writeRelayBackend(dir, upstream);
      renamedAt = performance.now();
    });
    samples.push(await stale);
    await supervisor.stop(model, { force: true });
  }
  return samples;
}

async function measureRespawnOverhead(supervisor: Supervisor, relay: BackendTarget): Promise<{ respawn: number[]; bare: number[] }> {
  const respawn: number[] = [];
  const bare: number[] = [];
  await supervisor.ensureRunning(relay, 'respawn');
  for (let i = 0; i < RUNS; i++) {
    bare.push(await bareSpawnToHealth(relay.dir));
    const start = performance.now();
    await supervisor.respawn('respawn');
    respawn.push(performance.now() - start);
  }
  await supervisor.stop('respawn', { force: true });
  return { respawn, bare };
}

/** A model's load to Health OK, spawn included, interleaved with the floor for the same backend. */
async function measureLoadToReady(supervisor: Supervisor, echo: BackendTarget): Promise<{ load: number[]; floor: number[] }> {
  const load: number[] = [];
  const floor: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    floor.push(await bareSpawnToHealth(echo.dir));
    const start = performance.now();
    await supervisor.ensureRunning(echo, `load-${i}`);
    load.push(performance.now() - start);
    await supervisor.stop(`load-${i}`, { force: true });
  }
  return { load, floor };
}

/** The longest the event loop went without a turn while `work` ran. */
async function longestBlock(work: () => Promise<unknown>): Promise<number> {
  let longest = 0;
  let last = performance.now();
  let running = true;
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  await work();
  running = false;
  return longest;
}

async function measureScan(supervisor: Supervisor, relay: BackendTarget): Promise<{ times: number[]; blocks: number[]; supervised: number; machine: number }> {
  const models = Array.from({ length: 200 }, (_, i) => `scan-${i}`);
  for (let i = 0; i < models.length; i += 20) {
    await Promise.all(models.slice(i, i + 20).map((model) => supervisor.ensureRunning(relay, model)));
  }
  const times: number[] = [];
  const blocks: number[] = [];
  let entries = 0;
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    entries = (await supervisor.scan()).filter((e) => e.supervised).length;
    times.push(performance.now() - start);
    blocks.push(await longestBlock(() => supervisor.scan()));
  }
  const machine = readdirSync('/proc').filter((name) => /^\d+$/.test(name)).length;
  await Promise.all(models.map((model) => supervisor.stop(model, { force: true })));
  return { times, blocks, supervised: entries, machine };
}
