// Settings → Cluster's invitations, through the host calls the UI makes over an agent's WebSocket, on Debian's
// nats-server in operator mode: the admin's home invites, another home redeems the invitation and its agent, started
// again with no option, joins; a used or edited invitation is refused in one line, with nothing written and no token in it.
import assert from 'node:assert/strict';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LOCAL_NODE } from '../../shared/api.ts';
import type { WireClient } from '../../shared/wire-client.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { connect } from '../agent/connect.ts';
import { cli, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { runNats, type NatsServer } from './test-nats.ts';

/** This file's own fixed ports, below the ephemeral range: the server, then each agent's backends. */
const NATS_PORT = 28500;
const URL = `nats://127.0.0.1:${NATS_PORT}`;
const PORTS: Record<string, string> = { admin: '28510-28519', gpu: '28520-28529', late: '28530-28539' };
const local = { node: LOCAL_NODE };

describe('invitations from Settings (clusterInvitations, clusterInvite, clusterJoin)', () => {
  let root: string;
  let gallery: string;
  let nats: NatsServer;
  const agents: Record<string, Agent> = {};
  const clients: Record<string, WireClient> = {};
  let command = '';
  /** The invitation in the command Settings shows (HANGAR_JOIN_TOKEN=<token> hangar agent). */
  const tokenIn = (line: string) => /^HANGAR_JOIN_TOKEN=(\S+) /.exec(line)![1]!;
  let cluster = '';

  const start = async (machine: string, extra: string[] = []) => {
    agents[machine]?.child.kill('SIGTERM');
    if (agents[machine]) await new Promise((done) => agents[machine]!.child.once('exit', done));
    clients[machine]?.close();
    agents[machine] = await startAgent(join(root, machine), gallery, ['--ports', PORTS[machine]!, '--heartbeat', '300', ...extra]);
    clients[machine] = await connect({ home: join(root, machine) });
    return clients[machine];
  };
  const refusal = (work: Promise<unknown>) => work.then(() => assert.fail('not refused'), (error: Error) => error.message);

  before(async () => {
    root = await tempDir('cluster-invitations');
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    const made = await cli('--home', join(root, 'admin'), 'cluster', 'init', '--url', URL, '--out', join(root, 'nats', 'nats.conf'), '--name', 'admin', '--json');
    assert.equal(made.code, 0, made.stderr);
    const init = JSON.parse(made.stdout) as { config: string; cluster: string };
    cluster = init.cluster;
    nats = await runNats(['-c', init.config]);
    await start('admin');
    await start('gpu');
    await start('late');
  });

  after(async () => {
    for (const client of Object.values(clients)) client.close();
    for (const agent of Object.values(agents)) agent.child.kill('SIGKILL');
    await nats?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test("the admin's home invites; the answer is the one command, with its expiry", async () => {
    assert.deepEqual(await clients.admin!.clusterInvitations(local), {
      admin: true, member: { cluster, url: URL, name: 'admin', role: 'node+viewer' }, restart: false,
    });
    const before = Date.now();
    const made = await clients.admin!.clusterInvite({ ...local, role: 'node', name: 'gpu', labels: { gpu: 'a100' }, expiresMinutes: 30 });
    assert.match(made.command, /^HANGAR_JOIN_TOKEN=hjoin1\.\S+ hangar agent$/);
    assert.deepEqual([made.name, made.role], ['gpu', 'node']);
    assert.ok(Math.abs(Date.parse(made.expires) - before - 30 * 60_000) < 60_000, made.expires);
    command = made.command;
    const taken = await refusal(clients.admin!.clusterInvite({ ...local, role: 'viewer', name: 'gpu', labels: {}, expiresMinutes: 30 }));
    assert.match(taken, /has a member named gpu already/);
  });

  test('a home that administers no cluster makes no invitation', async () => {
    assert.deepEqual(await clients.gpu!.clusterInvitations(local), { admin: false, member: null, restart: false });
    assert.match(await refusal(clients.gpu!.clusterInvite({ ...local, role: 'node', labels: {}, expiresMinutes: 5 })), /hangar cluster init/);
  });

  test('an edited invitation is refused in one line without the token, nothing written', async () => {
    const token = tokenIn(command);
    const edited = token.replace(/\.([A-Za-z0-9_-])/, (_, c: string) => `.${c === 'A' ? 'B' : 'A'}`);
    const message = await refusal(clients.gpu!.clusterJoin({ ...local, token: edited }));
    assert.match(message, /damaged|edited/);
    assert.ok(!message.includes(token.slice(10, 40)), 'no part of the token in the refusal');
    assert.deepEqual(await readdir(join(root, 'gpu', 'state')).then((files) => files.filter((f) => f.startsWith('cluster'))), []);
  });

  test('the pasted command joins; the agent started again with no option is in the cluster', async () => {
    const joined = await clients.gpu!.clusterJoin({ ...local, token: tokenIn(command) });
    assert.deepEqual(joined, { admin: false, member: { cluster, url: URL, name: 'gpu', role: 'node' }, restart: true });
    const used = await refusal(clients.late!.clusterJoin({ ...local, token: tokenIn(command) }));
    assert.match(used, /used/);
    assert.equal(used.split('\n').length, 1);
    await start('gpu');
    assert.equal((await clients.gpu!.clusterInvitations(local)).restart, false);
    const cards = await until('gpu online in the admin\'s nodes', async () => {
      const seen = await read(agents.admin!, 'nodes');
      return seen.some((c) => c.name === 'gpu' && c.status === 'online') ? seen : undefined;
    }, 15_000);
    assert.deepEqual(cards.find((c) => c.name === 'gpu')?.labels, { gpu: 'a100' });
    assert.match(await refusal(clients.gpu!.clusterJoin({ ...local, token: 'hjoin1.x.y' })), /in a cluster already/);
  });
});
