// Cluster figures at scale, with real agents on a real nats-server:
// - cluster_ls_ms_20x50: `hangar ls --on all --json` as a user runs it (the backend × node matrix and the cluster's
//   desired versions) for 20 nodes with 50 installed backends each, through the first agent; beside it, the same
//   matrix asked in process (every node's backends() and the desired versions over one open WebSocket);
// - rollout_overhead_ratio: a rolling upgrade of echo across the 3 nodes labelled ring=rollout, each with a loaded
//   model, against the sum of the same 3 upgrades run one node at a time by hand (each node's job, request to done);
//   each round upgrades once each way, taking turns going first, to a version of its own.
import { execFileSync } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect } from '../electron/agent/connect.ts';
import { startAgent, type Agent } from '../electron/agent/test-agent.ts';
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

async function waitRollout(client: WireClient, started: RolloutView): Promise<RolloutView> {
  for (;;) {
    const found = (await client.rollouts({ node: 'local' })).find((r) => r.id === started.id);
    if (found?.finishedAt) return found;
    await new Promise((r) => setTimeout(r, 20));
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
      const finished = await waitRollout(client, await client.rollout({ node: 'local', name: 'echo', on: 'label:ring=rollout' }));
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
  const nats = await startNats();
  const agents: Agent[] = [];
  try {
    // The rollout goes to every member, the matrix's nodes too: each node trusts every other's key.
    await trustingHomes([...matrixHomes(root), ...rolloutHomes(root)]);
    const matrix = await matrixMs(root, nats.url, agents);
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

