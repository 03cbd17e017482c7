// join_to_online_ms: from `HANGAR_JOIN_TOKEN=<token> hangar agent` to the node shown online in the admin's `hangar
// nodes`, on nats-server in operator mode (`hangar cluster init`), against the agent's own start (the same agent on a
// fresh home, in no cluster, to its listening line) + 1 heartbeat. revoke_to_refused_ms: from `hangar cluster revoke`
// to the revoked viewer's link closed by the server (its calls are refused from then on), against 2 s.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect } from '../electron/agent/connect.ts';
import { cli, startAgent, type Agent } from '../electron/agent/test-agent.ts';
import { DEFAULT_HEARTBEAT_MS } from '../electron/cluster/defaults.ts';
import { runNats } from '../electron/cluster/test-nats.ts';
import { tempDir } from '../electron/core/testing/fixtures.ts';
import type { WireClient } from '../shared/wire-client.ts';
import { median, type BenchFigure } from './figure.ts';

const NATS_PORT = 28190;
const ROUNDS = 5;
/** Each agent's backend ports, a range of its own. */
const ports = (i: number) => ['--ports', `${28200 + i * 10}-${28209 + i * 10}`];

async function until(probe: () => Promise<boolean>): Promise<void> {
  while (!(await probe())) await new Promise((r) => setTimeout(r, 10));
}

async function invite(adminHome: string, ...args: string[]): Promise<string> {
  const made = await cli('--home', adminHome, 'cluster', 'invite', '--json', ...args);
  assert.equal(made.code, 0, made.stderr);
  return (JSON.parse(made.stdout) as { token: string }).token;
}

export default async function (): Promise<BenchFigure[]> {
  const root = await tempDir('bench-join');
  const admin = join(root, 'admin');
  const made = await cli('--home', admin, 'cluster', 'init', '--url', `nats://127.0.0.1:${NATS_PORT}`, '--out', join(root, 'nats', 'nats.conf'), '--name', 'admin', '--json');
  assert.equal(made.code, 0, made.stderr);
  const nats = await runNats(['-c', (JSON.parse(made.stdout) as { config: string }).config]);
  const agents: Agent[] = [];
  const clients: WireClient[] = [];
  try {
    agents.push(await startAgent(admin, null, ports(0)));
    const viewer = await connect({ node: agents[0]!.url, home: admin });
    clients.push(viewer);
    const joins: number[] = [];
    const starts: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const name = `gpu${i}`;
      const token = await invite(admin, '--role', 'node', '--name', name);
      let started = performance.now();
      agents.push(await startAgent(join(root, `plain${i}`), null, ports(1 + 2 * i)));
      starts.push(performance.now() - started);
      started = performance.now();
      agents.push(await startAgent(join(root, name), null, ports(2 + 2 * i), { ...process.env, HANGAR_JOIN_TOKEN: token }));
      await until(async () => (await viewer.nodes({ node: 'local' })).some((c) => c.name === name && c.status === 'online'));
      joins.push(performance.now() - started);
    }

    const refusals: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const name = `ops${i}`;
      const token = await invite(admin, '--role', 'viewer', '--name', name);
      const ops = await startAgent(join(root, name), null, ports(1 + 2 * ROUNDS + i), { ...process.env, HANGAR_JOIN_TOKEN: token });
      agents.push(ops);
      const opsClient = await connect({ node: ops.url, home: ops.home });
      clients.push(opsClient);
      await until(async () => (await opsClient.clusterStatus({ node: 'local' })).link.connected);
      const revoking = performance.now();
      const revoked = await cli('--home', admin, 'cluster', 'revoke', name);
      assert.equal(revoked.code, 0, revoked.stderr);
      await until(async () => !(await opsClient.clusterStatus({ node: 'local' })).link.connected);
      refusals.push(performance.now() - revoking);
    }

    const start = median(starts);
    return [
      {
        name: 'join_to_online_ms',
        value: median(joins),
        unit: 'ms',
        goal: start + DEFAULT_HEARTBEAT_MS,
        note: `median of ${ROUNDS} nodes, from HANGAR_JOIN_TOKEN=<token> hangar agent to online in the admin's nodes; the agent's own start ${start.toFixed(0)} ms + a ${DEFAULT_HEARTBEAT_MS / 1000} s heartbeat`,
      },
      { name: 'revoke_to_refused_ms', value: median(refusals), unit: 'ms', goal: 2000, note: `hangar cluster revoke (a CLI process) to the viewer's link closed by the server, median of ${ROUNDS} viewers` },
    ];
  } finally {
    for (const client of clients) client.close();
    for (const agent of agents) agent.child.kill('SIGKILL');
    await nats.stop();
    await rm(root, { recursive: true, force: true });
  }
}
