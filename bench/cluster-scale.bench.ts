// Cluster figures at scale, with real agents on a real nats-server:
// - cluster_ls_ms_20x50: `hangar ls --on all --json` as a user runs it (the backend × node matrix and the cluster's
//   desired versions) for 20 nodes with 50 installed backends each, through the first agent; beside it, the same
//   matrix asked in process (every node's backends() and the desired versions over one open WebSocket);
// - rollout_overhead_ratio: a rolling upgrade of echo across the 3 nodes labelled ring=rollout, each with a loaded
//   model, against the sum of the same 3 upgrades run one node at a time by hand (each node's job, request to done);
//   each round upgrades once each way, taking turns going first, to a version of its own;
// - presence_recv_bytes_per_agent_s_20 / presence_server_out_ratio_20: with the 20 matrix nodes idle and one client on
//   the first (the one viewer), what each other node receives from the server a second, and all the server sends
//   against what one node publishes, from the server's own counts (its /connz);
// - presence_recv_bytes_per_node_s_all_watched_20: the same with a client on every node (each one watched), over a
//   whole cycle of cards.
import { execFileSync } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect } from '../electron/agent/connect.ts';
import { startAgent, type Agent } from '../electron/agent/test-agent.ts';
import { DEFAULT_HEARTBEAT_MS } from '../electron/cluster/defaults.ts';
import { CARD_EVERY_HEARTBEATS } from '../electron/cluster/member.ts';
import { WATCH_LINGER_HEARTBEATS } from '../electron/cluster/presence.ts';
import { trustingHomes } from '../electron/cluster/test-cluster.ts';
import { startNats } from '../electron/cluster/test-nats.ts';
import { echoSource, installedBackends, tempDir, writeGallery } from '../electron/core/testing/fixtures.ts';
import type { NodeCard, RolloutView } from '../shared/types.ts';
import type { WireClient } from '../shared/wire-client.ts';
import { inTurns, median, type BenchFigure } from './figure.ts';

const NODES = 20;
const ROLLOUT_ROUNDS = 5;
const BACKENDS = 50;
const MATRIX_RUNS = 20;
const CLI_RUNS = 7;
const TRAFFIC_WINDOWS = 5;
const TRAFFIC_WINDOW_MS = 4_000;
/** How often a rollout followed by its events is also looked at, as the CLI does. */
const ROLLOUT_LOOK_MS = 2_000;

async function members(client: WireClient, count: number): Promise<NodeCard[]> {
  for (;;) {
    const cards = (await client.nodes({ node: 'local' })).filter((c) => c.status === 'online');
    if (cards.length >= count) return cards;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const matrixHomes = (root: string) => Array.from({ length: NODES }, (_, i) => join(root, `matrix-${i}`));
const rolloutHomes = (root: string) => [0, 1, 2].map((i) => join(root, `rollout-home-${i}`));

async function matrixMs(root: string, nats: string, agents: Agent[]): Promise<{ cli: number; ps: number; inProcess: number }> {
  const gallery = join(root, 'empty.yaml');
  await writeFile(gallery, '[]\n');
  for (const [i, home] of matrixHomes(root).entries()) {
    await installedBackends(root, home, BACKENDS);
    agents.push(await startAgent(home, gallery, ['--cluster', nats, '--name', `m${i}`]));
  }
  const client = await connect({ node: agents[0]!.url, home: agents[0]!.home });
  try {
    const cards = await members(client, NODES);
    const samples: number[] = [];
    for (let run = 0; run < MATRIX_RUNS; run++) {
      const start = performance.now();
      const [rows] = await Promise.all([Promise.all(cards.map((card) => client.backends({ node: card.self ? 'local' : card.id }))), client.desired({ node: 'local' })]);
      samples.push(performance.now() - start);
      if (rows.some((r) => r.length !== BACKENDS)) throw new Error('a node did not list its backends');
    }
    const hangar = (...args: string[]) => {
      const start = performance.now();
      const out = execFileSync('bin/hangar.js', ['--node', agents[0]!.url, '--home', agents[0]!.home, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
      return { ms: performance.now() - start, out };
    };
    const cli: number[] = [];
    const ps: number[] = [];
    for (let run = 0; run < CLI_RUNS; run++) {
      ps.push(hangar('ps', '--json').ms);
      const ls = hangar('ls', '--on', 'all', '--json');
      cli.push(ls.ms);
      if (!ls.out.includes(`backend-${String(BACKENDS - 1).padStart(4, '0')}`)) throw new Error('ls --on all did not list the backends');
    }
    return { cli: median(cli), ps: median(ps), inProcess: median(samples) };
  } finally {
    client.close();
  }
}

interface Traffic {
  /** Bytes a second the server sent to each node's connection, and received from it, by node name. */
  received: Map<string, number>;
  published: Map<string, number>;
  serverOut: number;
}

async function connections(monitor: string): Promise<{ name: string; in_bytes: number; out_bytes: number }[]> {
  const reply = (await (await fetch(`${monitor}/connz?limit=4096`)).json()) as { connections: { name: string; in_bytes: number; out_bytes: number }[] };
  return reply.connections;
}

async function trafficWindow(monitor: string, windowMs = TRAFFIC_WINDOW_MS): Promise<Traffic> {
  const before = new Map((await connections(monitor)).map((c) => [c.name, c]));
  await new Promise((r) => setTimeout(r, windowMs));
  const after = await connections(monitor);
  const perSecond = (bytes: number) => bytes / (windowMs / 1000);
  const traffic: Traffic = { received: new Map(), published: new Map(), serverOut: 0 };
  for (const c of after) {
    const was = before.get(c.name) ?? { in_bytes: 0, out_bytes: 0 };
    traffic.received.set(c.name, perSecond(c.out_bytes - was.out_bytes));
    traffic.published.set(c.name, perSecond(c.in_bytes - was.in_bytes));
    traffic.serverOut += perSecond(c.out_bytes - was.out_bytes);
  }
  return traffic;
}

/** The idle matrix's presence traffic: one client on m0, then one on every node; medians of windows. */
async function presenceTraffic(monitor: string, agents: Agent[]): Promise<{ nodeReceived: number; viewerReceived: number; published: number; serverOut: number; allWatched: number; allWatchedMax: number }> {
  const measure = async () => {
    const windows: Traffic[] = [];
    for (let i = 0; i < TRAFFIC_WINDOWS; i++) windows.push(await trafficWindow(monitor));
    const of = (pick: (t: Traffic) => number) => median(windows.map(pick));
    const others = (t: Traffic) => median(Array.from({ length: NODES - 1 }, (_, i) => t.received.get(`m${i + 1}`) ?? 0));
    return {
      nodeReceived: of(others),
      viewerReceived: of((t) => t.received.get('m0') ?? 0),
      published: of((t) => median(Array.from({ length: NODES }, (_, i) => t.published.get(`m${i}`) ?? 0))),
      serverOut: of((t) => t.serverOut),
    };
  };
  const viewer = await connect({ node: agents[0]!.url, home: agents[0]!.home });
  try {
    await members(viewer, NODES);
    const oneViewer = await measure();
    const everyone = await Promise.all(agents.slice(1, NODES).map((a) => connect({ node: a.url, home: a.home })));
    try {
      await new Promise((r) => setTimeout(r, 1000));
      // One window over a whole cycle of cards (each node's at least every CARD_EVERY_HEARTBEATS), beats between.
      const cycle = await trafficWindow(monitor, (CARD_EVERY_HEARTBEATS + 2) * DEFAULT_HEARTBEAT_MS);
      const received = Array.from({ length: NODES }, (_, i) => cycle.received.get(`m${i}`) ?? 0);
      return { ...oneViewer, allWatched: median(received), allWatchedMax: Math.max(...received) };
    } finally {
      for (const client of everyone) client.close();
    }
  } finally {
    viewer.close();
  }
}

/**
 * The rollout `start` begins, followed to its end as `hangar upgrade --on` follows it: by its events, with a slow look
 * at the record behind them (as the upgrades by hand are waited for by their jobs' events, not asked after).
 */
async function rolledOut(client: WireClient, start: () => Promise<RolloutView>): Promise<RolloutView> {
  const ended = new Map<string, RolloutView>();
  let wake = () => {};
  const off = client.onEvent((e) => {
    if (e.type !== 'rollout' || e.rollout.finishedAt === null) return;
    ended.set(e.rollout.id, e.rollout);
    wake();
  });
  try {
    const { id } = await start();
    for (;;) {
      const looked = ended.has(id) ? undefined : (await client.rollouts({ node: 'local' })).find((r) => r.id === id && r.finishedAt !== null);
      // Its end may have been told while the record was asked for: looked at again before waiting for the next.
      const done = ended.get(id) ?? looked;
      if (done) return done;
      await new Promise<void>((resolve) => {
        const look = setTimeout(resolve, ROLLOUT_LOOK_MS);
        wake = () => {
          clearTimeout(look);
          resolve();
        };
      });
    }
  } finally {
    off();
  }
}

async function rolloutRatio(root: string, nats: string, agents: Agent[]): Promise<{ ratio: number; rollout: number; manual: number }> {
  const galleries: string[] = [];
  // Each upgrade, by hand or rolling, goes to a version of its own.
  const versions = Array.from({ length: 1 + 2 * ROLLOUT_ROUNDS }, (_, i) => `1.0.${i}`);
  const sources = await Promise.all(versions.map((v) => echoSource(root, v)));
  let published = 0;
  const publishNext = () => {
    published++;
    return Promise.all(galleries.map((g) => writeGallery(g, [{ name: 'echo', uri: sources[published]!, version: versions[published]! }])));
  };
  const ring: Agent[] = [];
  for (let i = 0; i < 3; i++) {
    const gallery = join(root, `rollout-${i}.yaml`);
    galleries.push(gallery);
    await writeGallery(gallery, [{ name: 'echo', uri: sources[0]!, version: '1.0.0' }]);
    const agent = await startAgent(rolloutHomes(root)[i]!, gallery, ['--cluster', nats, '--name', `r${i}`, '--label', 'ring=rollout']);
    agents.push(agent);
    ring.push(agent);
  }
  const client = await connect({ node: ring[0]!.url, home: ring[0]!.home });
  try {
    const cards = (await members(client, NODES + 3)).filter((c) => c.name.startsWith('r'));
    const node = (card: NodeCard) => (card.self ? 'local' : card.id);
    for (const card of cards) {
      await client.waitJob({ node: node(card), id: (await client.install({ node: node(card), name: 'echo' })).id });
      await client.load({ node: node(card), backend: 'echo', model: 'm1' });
    }
    const manual: number[] = [];
    const rollouts: number[] = [];
    const byHand = async () => {
      await publishNext();
      const start = performance.now();
      for (const card of cards) {
        const done = await client.waitJob({ node: node(card), id: (await client.upgrade({ node: node(card), name: 'echo' })).id });
        if (done.state !== 'done') throw new Error(`upgrade on ${card.name}: ${done.error}`);
      }
      manual.push(performance.now() - start);
    };
    const rolling = async () => {
      await publishNext();
      const start = performance.now();
      const finished = await rolledOut(client, () => client.rollout({ node: 'local', name: 'echo', on: 'label:ring=rollout' }));
      rollouts.push(performance.now() - start);
      if (finished.nodes.length !== 3 || finished.nodes.some((n) => n.step !== 'upgraded')) throw new Error(`rollout: ${JSON.stringify(finished.nodes)}`);
    };
    for (let round = 0; round < ROLLOUT_ROUNDS; round++) await inTurns(round, [byHand, rolling]);
    const [rollout, byHandMs] = [median(rollouts), median(manual)];
    return { ratio: rollout / byHandMs, rollout, manual: byHandMs };
  } finally {
    client.close();
  }
}

export default async function (): Promise<BenchFigure[]> {
  const root = await tempDir('bench-cluster-scale');
  const nats = await startNats(['-m', '-1']);
  const agents: Agent[] = [];
  try {
    // The rollout goes to every member, the matrix's nodes too: each node trusts every other's key.
    await trustingHomes([...matrixHomes(root), ...rolloutHomes(root)]);
    const matrix = await matrixMs(root, nats.url, agents);
    // The matrix's client has gone: its node stops watching after its linger, and the traffic settles to what it costs.
    await new Promise((r) => setTimeout(r, WATCH_LINGER_HEARTBEATS * DEFAULT_HEARTBEAT_MS + 1000));
    const presence = await presenceTraffic(nats.monitor!, agents);
    const rollout = await rolloutRatio(root, nats.url, agents);
    return [
      {
        name: 'cluster_ls_ms_20x50',
        value: matrix.cli,
        unit: 'ms',
        goal: matrix.ps + 150,
        note: `hangar ls --on all --json: ${NODES} nodes with ${BACKENDS} backends each, median of ${CLI_RUNS}; goal: hangar ps --json (one node, ${matrix.ps.toFixed(0)} ms) + 150 ms; the same matrix and the desired versions in process over an open WebSocket ${matrix.inProcess.toFixed(1)} ms (median of ${MATRIX_RUNS})`,
      },
      {
        name: `presence_recv_bytes_per_agent_s_${NODES}`,
        value: presence.nodeReceived,
        unit: 'B/s',
        goal: 1024,
        note: `what each of ${NODES - 1} idle nodes receives from the NATS server a second while one client watches the cluster through m0 (which receives ${presence.viewerReceived.toFixed(0)} B/s); medians of ${TRAFFIC_WINDOWS} windows of ${TRAFFIC_WINDOW_MS / 1000} s`,
      },
      {
        name: `presence_recv_bytes_per_node_s_all_watched_${NODES}`,
        value: presence.allWatched,
        unit: 'B/s',
        goal: 2048,
        note: `what each node receives a second with a client on every node (each watching the cluster), over one window of ${CARD_EVERY_HEARTBEATS + 2} heartbeats (a whole cycle of cards, beats between), median of the ${NODES} nodes (the most: ${presence.allWatchedMax.toFixed(0)} B/s)`,
      },
      {
        name: `presence_server_out_ratio_${NODES}`,
        value: presence.serverOut / presence.published,
        unit: 'x',
        goal: NODES,
        note: `all the server sends a second (${presence.serverOut.toFixed(0)} B/s) against what one node publishes (${presence.published.toFixed(0)} B/s: its beats, and its card when due), ${NODES} nodes and one viewer`,
      },
      {
        name: 'rollout_overhead_ratio',
        value: rollout.ratio,
        unit: 'x',
        goal: 1.2,
        note: `a rolling upgrade of 3 nodes with a loaded model each ${rollout.rollout.toFixed(0)} ms vs the same 3 upgrades one by one ${rollout.manual.toFixed(0)} ms, taking turns going first, median of ${ROLLOUT_ROUNDS}`,
      },
    ];
  } finally {
    for (const agent of agents) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  }
}

