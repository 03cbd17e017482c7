// Flat listings: gallery(), backends() and deleting one backend, at 10, 100, 1,000 and 5,000 installed backends (each
// with a gallery entry), on a real LocalNode and a real backends directory, and the same calls over the WebSocket of
// the built agent at 5,000. Goal: each at most 20 ms in process and 40 ms over the WebSocket at 5,000, and at most 2x
// its time at 10 (what does not grow with the backends: a call, a view per entry). Cold: the first backends() of a
// fresh start on a home an agent ran on before, at 10 and at 5,000: over the WebSocket from the built agent's
// "listening" line (a client's connection included), and in process from LocalNode.start(). Goal at 5,000: 300 ms
// over the WebSocket, and at most 3x its time at 10. As users meet it: from the agent's spawn through `hangar ls --json`
// at 5,000, against the first `hangar ps --json` at 10 timed the same way; goal: that + 150 ms.
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect } from '../electron/agent/connect.ts';
import { hangar, startAgent, type Agent } from '../electron/agent/test-agent.ts';
import { installedBackends } from '../electron/core/testing/fixtures.ts';
import { LocalNode } from '../electron/core/node.ts';
import type { NodeApi } from '../shared/api.ts';
import { inTurns, median, type BenchFigure } from './figure.ts';

const SIZES = [10, 100, 1_000, 5_000];
const LARGEST = SIZES.at(-1)!;
const CALLS = 9;
const DELETES = 5;
const COLD_SIZES = [SIZES[0]!, LARGEST] as const;
const COLD_STARTS = 7;

interface Timings {
  gallery: number;
  backends: number;
  deleteOne: number;
  /** backends() right after each delete: the views of one row fewer, the others unchanged. */
  afterDelete: number;
}

async function timeCalls(call: () => Promise<unknown>, times: number): Promise<number> {
  await call(); // the first call loads the gallery and the index; what users repeat is what is measured
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    await call();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

/** The three figures through `api`, whichever transport it is. */
async function measureApi(api: Pick<NodeApi, 'gallery' | 'backends' | 'delete' | 'waitJob'>): Promise<Timings> {
  const gallery = await timeCalls(() => api.gallery({ node: 'local' }), CALLS);
  const backends = await timeCalls(() => api.backends({ node: 'local' }), CALLS);
  const deletes: number[] = [];
  const afterDelete: number[] = [];
  for (let i = 0; i < DELETES; i++) {
    const start = performance.now();
    const job = await api.delete({ node: 'local', name: `backend-${String(i).padStart(4, '0')}` });
    const done = await api.waitJob({ node: 'local', id: job.id });
    if (done.state !== 'done') throw new Error(`delete failed: ${done.error}`);
    deletes.push(performance.now() - start);
    const listing = performance.now();
    await api.backends({ node: 'local' });
    afterDelete.push(performance.now() - listing);
  }
  return { gallery, backends, deleteOne: median(deletes), afterDelete: median(afterDelete) };
}

async function inProcess(root: string, count: number): Promise<Timings> {
  const home = join(root, `home-${count}`);
  const gallery = await installedBackends(root, home, count);
  const node = new LocalNode({ home, galleries: [{ name: 'scale', location: gallery }], runtimeEnv: {}, capability: 'default' });
  await node.start();
  try {
    return await measureApi(node);
  } finally {
    await node.close({ stopBackends: true });
  }
}

async function overWebSocket(root: string, count: number): Promise<Timings> {
  const home = join(root, `agent-home-${count}`);
  const gallery = await installedBackends(root, home, count);
  const agent = await startAgent(home, gallery);
  const client = await connect({ node: agent.url, home });
  try {
    return await measureApi(client);
  } finally {
    client.close();
    await stopAgent(agent);
  }
}

async function stopAgent(agent: Agent): Promise<void> {
  // Its home is removed next, or started on again: the agent must have written its last state file first.
  const exited = once(agent.child, 'exit');
  agent.child.kill('SIGTERM');
  await exited;
}

/** The built agent started on `home`: from its "listening" line through a new client's connection to the first backends(). */
async function coldOverWebSocket(home: string, gallery: string): Promise<number> {
  const agent = await startAgent(home, gallery);
  try {
    const start = performance.now();
    const client = await connect({ node: agent.url, home });
    await client.backends({ node: 'local' });
    const took = performance.now() - start;
    client.close();
    return took;
  } finally {
    await stopAgent(agent);
  }
}

/** From the agent's spawn on `home` through the CLI's `args` run to its end (its own start and connection included). */
async function coldCli(home: string, gallery: string, ...args: string[]): Promise<number> {
  const start = performance.now();
  const agent = await startAgent(home, gallery);
  try {
    const ran = await hangar(agent, ...args, '--json');
    if (ran.code !== 0) throw new Error(`hangar ${args.join(' ')}: ${ran.stderr}`);
    return performance.now() - start;
  } finally {
    await stopAgent(agent);
  }
}

/** A LocalNode on `home`: from start() to its first backends(). */
async function coldInProcess(home: string, gallery: string): Promise<number> {
  const node = new LocalNode({ home, galleries: [{ name: 'scale', location: gallery }], runtimeEnv: {}, capability: 'default' });
  try {
    const start = performance.now();
    await node.start();
    await node.backends({ node: 'local' });
    return performance.now() - start;
  } finally {
    await node.close({ stopBackends: true });
  }
}

/** Cold listings at each of COLD_SIZES, the sizes taking turns going first; each home has had an agent once. */
async function coldListings(root: string): Promise<Map<number, { ws: number; inProcess: number; cli: number }>> {
  const homes = new Map<number, { home: string; gallery: string; ws: number[]; inProcess: number[]; cli: number[] }>();
  for (const count of COLD_SIZES) {
    const home = join(root, `cold-home-${count}`);
    const gallery = await installedBackends(root, home, count);
    await coldOverWebSocket(home, gallery);
    homes.set(count, { home, gallery, ws: [], inProcess: [], cli: [] });
  }
  const all = [...homes.values()];
  for (let round = 0; round < COLD_STARTS; round++) {
    await inTurns(round, all.map((h) => async () => h.ws.push(await coldOverWebSocket(h.home, h.gallery))));
    await inTurns(round, all.map((h) => async () => h.inProcess.push(await coldInProcess(h.home, h.gallery))));
    // The largest home is listed (`ls`); the smallest asked for its processes (`ps`), the goal's peer.
    await inTurns(round, [...homes].map(([count, h]) => async () => h.cli.push(await coldCli(h.home, h.gallery, count === LARGEST ? 'ls' : 'ps'))));
  }
  return new Map([...homes].map(([count, h]) => [count, { ws: median(h.ws), inProcess: median(h.inProcess), cli: median(h.cli) }]));
}

export default async function (): Promise<BenchFigure[]> {
  const root = mkdtempSync(join(tmpdir(), 'hangar-bench-scale-'));
  try {
    const results = new Map<number, Timings>();
    for (const count of SIZES) results.set(count, await inProcess(root, count));
    const wire = await overWebSocket(root, LARGEST);
    const figures: BenchFigure[] = [];
    for (const [key, what] of [
      ['gallery', 'gallery()'],
      ['backends', 'backends()'],
      ['deleteOne', 'delete one backend, request to job done'],
    ] as const) {
      const scaling = SIZES.map((n) => `${n}: ${results.get(n)![key].toFixed(1)} ms`).join(', ');
      const largest = results.get(LARGEST)![key];
      const smallest = results.get(SIZES[0]!)![key];
      const name = key === 'deleteOne' ? 'delete' : key;
      figures.push(
        { name: `${name}_ms_${LARGEST}`, value: largest, unit: 'ms', goal: 20, note: `${what} in process with N installed (${scaling}), median of ${key === 'deleteOne' ? DELETES : CALLS}` },
        { name: `${name}_growth_${SIZES[0]}_to_${LARGEST}`, value: largest / smallest, unit: 'x', goal: 2, note: `${what} at ${LARGEST} against at ${SIZES[0]}` },
        { name: `${name}_ws_ms_${LARGEST}`, value: wire[key], unit: 'ms', goal: 40, note: `${what} over the built agent's WebSocket at ${LARGEST}` },
      );
    }
    figures.push({
      name: `backends_after_delete_ws_ms_${LARGEST}`,
      value: wire.afterDelete,
      unit: 'ms',
      goal: 40,
      note: `backends() over the built agent's WebSocket right after each delete at ${LARGEST}, median of ${DELETES} (in process: ${results.get(LARGEST)!.afterDelete.toFixed(1)} ms)`,
    });
    const cold = await coldListings(root);
    const [small, large] = COLD_SIZES.map((n) => cold.get(n)!);
    figures.push(
      {
        name: `backends_cold_ms_${LARGEST}`,
        value: large!.ws,
        unit: 'ms',
        goal: 300,
        note: `the first backends() after the built agent starts on a home of ${LARGEST}, from its "listening" line, a client's connection included (${small!.ws.toFixed(1)} ms at ${SIZES[0]}); in process, LocalNode.start() to the first backends(): ${large!.inProcess.toFixed(1)} ms (${small!.inProcess.toFixed(1)} ms at ${SIZES[0]}); median of ${COLD_STARTS} starts each, the sizes taking turns`,
      },
      { name: `backends_cold_growth_${SIZES[0]}_to_${LARGEST}`, value: large!.ws / small!.ws, unit: 'x', goal: 3, note: `that first backends() at ${LARGEST} against at ${SIZES[0]}` },
      {
        name: `backends_cold_cli_ms_${LARGEST}`,
        value: large!.cli,
        unit: 'ms',
        goal: small!.cli + 150,
        note: `from the agent's spawn on a home of ${LARGEST} through \`hangar ls --json\` (a CLI process) to its end; peer: the first \`hangar ps --json\` at ${SIZES[0]} timed the same way, ${small!.cli.toFixed(0)} ms; median of ${COLD_STARTS} each, taking turns`,
      },
    );
    return figures;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
