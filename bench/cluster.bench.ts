// cluster_call_ms: a call routed over NATS to another node, vs the same call on the host's own node.
// node_offline_detect_ms: from SIGKILL of a member to a viewer showing it offline, at the default heartbeat.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from '../electron/agent/connect.ts';
import { startAgent, type Agent } from '../electron/agent/test-agent.ts';
import { trustingHomes } from '../electron/cluster/test-cluster.ts';
import { startNats } from '../electron/cluster/test-nats.ts';
import { tempDir } from '../electron/core/testing/fixtures.ts';
import type { WireClient } from '../shared/wire-client.ts';
import { median, type BenchFigure } from './figure.ts';

const CALLS = 200;

async function callMs(client: WireClient, node: string): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    await client.backends({ node });
    samples.push(performance.now() - started);
  }
  return median(samples);
}

export default async function (): Promise<BenchFigure[]> {
  const root = await tempDir('bench-cluster');
  const nats = await startNats();
  const agents: Agent[] = [];
  const gallery = join(root, 'none.yaml');
  let client: WireClient | undefined;
  try {
    await trustingHomes(['viewer', 'worker'].map((name) => join(root, name)));
    for (const [i, name] of ['viewer', 'worker'].entries()) {
      agents.push(await startAgent(join(root, name), gallery, ['--cluster', nats.url, '--name', name, '--ports', `2${4 + i}000-2${4 + i}099`]));
    }
    client = await connect({ node: agents[0]!.url, home: agents[0]!.home });
    let worker;
    while (!(worker = (await client.nodes({ node: 'local' })).find((c) => c.name === 'worker'))) await new Promise((r) => setTimeout(r, 20));
    const local = await callMs(client, 'local');
    const routed = await callMs(client, worker.id);

    agents[1]!.child.kill('SIGKILL');
    const killed = performance.now();
    const viewer = client;
    await new Promise<void>((resolve) => {
      const off = viewer.onEvent((e) => {
        if (e.type === 'member' && e.member.id === worker.id && e.member.status === 'offline') {
          off();
          resolve();
        }
      });
    });
    const offlineMs = performance.now() - killed;
    return [
      { name: 'cluster_call_ms', value: routed, unit: 'ms', goal: 20, note: `median of ${CALLS} backends() calls to another node; ${local.toFixed(2)} ms on the host's own` },
      { name: 'node_offline_detect_ms', value: offlineMs, unit: 'ms', goal: 6500, note: 'SIGKILL to offline in a viewer, 2 s heartbeat (3 missed)' },
    ];
  } finally {
    client?.close();
    for (const agent of agents) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  }
}
