// localai_swap_race_misses_200: 200 of Hangar's upgrades of a backend while a LocalAI server beside the node loads a
// model on it at a random moment (before, during or after the swap): a miss is the model running from a replaced tree
// once both the job and the load have ended. A real LocalNode with the LocalAI link as its co-runner and the stand-in
// LocalAI written from LocalAI's code, in this process.
// agent_ping_ms_under_hostile_localai: a real agent's answer to a cheap call (its node info) while the LocalAI it is
// linked to lists 100,000 loaded models on every read (polled every 200 ms), against the same agent linked to a quiet
// LocalAI. Goal: 2 × quiet.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '../electron/agent/connect.ts';
import { LocalNode } from '../electron/core/node.ts';
import { echoSource, runJob, writeGallery } from '../electron/core/testing/fixtures.ts';
import { LocalAiServer } from '../electron/localai/server/server.ts';
import { HostileLocalAi } from '../electron/localai/testing/hostile-localai.ts';
import { StandInServer } from '../electron/localai/testing/standin-server.ts';
import { startAgent } from '../e2e/fixtures/agent.ts';
import { median, type BenchFigure } from './figure.ts';

const SWAPS = 200;
const PINGS = 200;

export default async function (): Promise<BenchFigure[]> {
  return [await swapRace(), await pingUnderHostile()];
}

async function swapRace(): Promise<BenchFigure> {
  const root = await mkdtemp(join(tmpdir(), 'hangar-bench-localai-race-'));
  const gallery = join(root, 'index.yaml');
  const source = await echoSource(root, 'base');
  let minor = 0;
  const publish = async () => {
    const version = `1.${++minor}.0`;
    await writeGallery(gallery, [{ name: 'echo', uri: source, version }]);
  };
  await publish();
  const link = new LocalAiServer({ stateDir: join(root, 'home', 'state'), fixed: null });
  const node = new LocalNode({ home: join(root, 'home'), galleries: [{ name: 'bench', location: gallery }], runtimeEnv: { HANGAR_NODE: process.execPath }, capability: 'default', coRunner: link });
  await node.start();
  const live = join(node.backendsDir, 'echo');
  let localai: StandInServer | null = null;
  const durations: number[] = [];
  let misses = 0;
  try {
    await runJob(node, node.install({ node: 'local', name: 'echo' }));
    const server = (localai = new StandInServer({ backendsDir: node.backendsDir, models: { r: 'echo' }, healthAttempts: 500, healthIntervalMs: 20, loadFailureCooldownMs: 0 }));
    await server.start();
    const post = async (path: string) => {
      const response = await fetch(server.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"r"}' });
      return response.status;
    };
    await link.update({ url: server.url });
    const fromLiveTree = async () => {
      const pid = server.pids().get('r');
      if (!pid) return false;
      const [cwd, dir] = await Promise.all([stat(`/proc/${pid}/cwd`, { bigint: true }).catch(() => null), stat(live, { bigint: true })]);
      return cwd !== null && cwd.dev === dir.dev && cwd.ino === dir.ino;
    };
    for (let i = 0; i < SWAPS; i++) {
      await post('/backend/shutdown');
      await publish();
      // Spread over about one swap's length, measured as it goes.
      const span = durations.length > 0 ? median(durations) : 500;
      const delay = Math.random() * span * 1.2;
      const started = performance.now();
      const loading = sleep(delay).then(() => post('/backend/load'));
      const job = await runJob(node, node.upgrade({ node: 'local', name: 'echo' }));
      durations.push(performance.now() - started);
      const loaded = await loading;
      if (job.state !== 'done') throw new Error(`upgrade ${i} ended ${job.state}: ${job.error}`);
      if (loaded !== 200) throw new Error(`load ${i} answered ${loaded}`);
      if (!(await fromLiveTree())) misses++;
    }
  } finally {
    await node.close({ stopBackends: true });
    await localai?.stop();
    await rm(root, { recursive: true, force: true });
  }
  return {
    name: 'localai_swap_race_misses_200',
    value: misses,
    unit: 'misses',
    goal: 0,
    note: `${SWAPS} upgrades, each with a load of a model on the backend at a random moment within 1.2 × a swap's length (median ${median(durations).toFixed(0)} ms); a miss: the model on a replaced tree once job and load end`,
  };
}

async function pingUnderHostile(): Promise<BenchFigure> {
  const root = await mkdtemp(join(tmpdir(), 'hangar-bench-localai-ping-'));
  const localai = new StandInServer({ backendsDir: join(root, 'home', 'backends'), models: {} });
  await localai.start();
  const hostile = new HostileLocalAi(localai.url);
  await hostile.start();
  const agent = await startAgent({ home: join(root, 'home'), args: ['--localai-url', hostile.url, '--localai-poll', '200'] });
  const client = await connect({ node: agent.url, home: join(root, 'home') });
  try {
    const pings = async () => {
      const times: number[] = [];
      for (let i = 0; i < PINGS; i++) {
        const t = performance.now();
        await client.info({ node: 'local' });
        times.push(performance.now() - t);
        await sleep(10);
      }
      return median(times);
    };
    await sleep(1000);
    const quiet = await pings();
    hostile.spoil('/system', { kind: 'body', body: JSON.stringify({ backends: [], loaded_models: Array.from({ length: 100_000 }, () => ({ id: '' })) }) });
    await sleep(1000);
    const underHostile = await pings();
    return {
      name: 'agent_ping_ms_under_hostile_localai',
      value: underHostile,
      unit: 'ms',
      goal: +(2 * quiet).toFixed(3),
      note: `median of ${PINGS} node-info calls to a real agent whose LocalAI lists 100,000 loaded models on each read (every 200 ms); quiet ${quiet.toFixed(2)} ms; goal 2 × quiet`,
    };
  } finally {
    client.close();
    await agent.stop();
    await hostile.stop();
    await localai.stop();
    await rm(root, { recursive: true, force: true });
  }
}
