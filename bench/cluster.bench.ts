// cluster_call_ms: a backends() call routed over NATS to another node that has 20 installed backends (a real reply),
// against the same call on the host's own node with as many.
// node_offline_detect_ms: SIGKILL of a member to a viewer showing it offline, at the default heartbeat: the p95 of
// 10 kills (the member started again between them), against 3 missed heartbeats + 0.5 s.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from '../electron/agent/connect.ts';
import { startAgent, type Agent } from '../electron/agent/test-agent.ts';
import { DEFAULT_HEARTBEAT_MS } from '../electron/cluster/defaults.ts';
import { MISSED_HEARTBEATS } from '../electron/cluster/heartbeat.ts';
import { trustingHomes } from '../electron/cluster/test-cluster.ts';
import { startNats } from '../electron/cluster/test-nats.ts';
import { installedBackends, tempDir } from '../electron/core/testing/fixtures.ts';
import type { WireClient } from '../shared/wire-client.ts';
import { median, type BenchFigure } from './figure.ts';

const CALLS = 200;
const BACKENDS = 20;
const KILLS = 10;

async function callMs(client: WireClient, node: string): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    const backends = await client.backends({ node });
    samples.push(performance.now() - started);
    if (backends.length !== BACKENDS) throw new Error(`node ${node} listed ${backends.length} backends, not ${BACKENDS}`);
  }
  return median(samples);
}

function p95(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(0.95 * sorted.length) - 1)]!;
}

/** The id of the member named `name` once the viewer sees it online. */
async function online(client: WireClient, name: string): Promise<string> {
  for (;;) {
    const card = (await client.nodes({ node: 'local' })).find((c) => c.name === name && c.status === 'online');
    if (card) return card.id;
    await new Promise((r) => setTimeout(r, 20));
  }
}

function offline(client: WireClient, id: string): Promise<void> {
  return new Promise<void>((resolve) => {
    const off = client.onEvent((e) => {
      if (e.type === 'member' && e.member.id === id && e.member.status === 'offline') {
        off();
        resolve();
      }
    });
  });
}

export default async function (): Promise<BenchFigure[]> {
  const root = await tempDir('bench-cluster');
  const nats = await startNats();
  const agents: Agent[] = [];
  let client: WireClient | undefined;
  try {
    const homes = ['viewer', 'worker'].map((name) => join(root, name));
    await trustingHomes(homes);
    const galleries = await Promise.all(homes.map((home) => installedBackends(root, home, BACKENDS)));
    const start = (i: number) => startAgent(homes[i]!, galleries[i]!, ['--cluster', nats.url, '--name', ['viewer', 'worker'][i]!, '--ports', `2${4 + i}000-2${4 + i}099`]);
    agents.push(await start(0), await start(1));
    client = await connect({ node: agents[0]!.url, home: agents[0]!.home });
    const viewer = client;
    const worker = await online(viewer, 'worker');
    const local = await callMs(viewer, 'local');
    const routed = await callMs(viewer, worker);

    const detections: number[] = [];
    for (let i = 0; i < KILLS; i++) {
      if (i > 0) {
        agents[1] = await start(1);
        await online(viewer, 'worker');
      }
      const gone = offline(viewer, worker);
      agents[1]!.child.kill('SIGKILL');
      const killed = performance.now();
      await gone;
      detections.push(performance.now() - killed);
    }
    const designMax = MISSED_HEARTBEATS * DEFAULT_HEARTBEAT_MS;
    return [
      { name: 'cluster_call_ms', value: routed, unit: 'ms', goal: 20, note: `median of ${CALLS} backends() calls to another node, ${BACKENDS} backends in each reply; ${local.toFixed(2)} ms on the host's own` },
      {
        name: 'node_offline_detect_ms',
        value: p95(detections),
        unit: 'ms',
        goal: designMax + 500,
        note: `p95 of ${KILLS} SIGKILLs of a member to offline in a viewer (median ${median(detections).toFixed(0)} ms); ${DEFAULT_HEARTBEAT_MS / 1000} s heartbeat, goal ${MISSED_HEARTBEATS} heartbeats + 0.5 s`,
      },
    ];
  } finally {
    client?.close();
    for (const agent of agents) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  }
}
