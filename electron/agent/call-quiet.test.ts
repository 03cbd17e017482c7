// The agent's work that nobody waits for (loading gRPC, the shell for the next start: a few hundred ms of a blocked
// thread) waits until calls are quiet. A client that has connected counts, even one that connected while the agent
// was busy and still waits in the kernel's queue: its call is on its way.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { startHost, startNode } from '../fleet/start.ts';
import { tempDir } from '../core/testing/fixtures.ts';
import { rendererDir } from './paths.ts';
import { startAgentServer } from './server.ts';

const QUIET_MS = 150;

test('a client that connected, even while the agent was busy, keeps what waits for quiet calls waiting', async (t) => {
  const home = await tempDir('call-quiet');
  const { node } = await startNode({ home, galleries: [], runtimeEnv: {} });
  const host = await startHost({ node, home, stateDir: node.stateDir });
  const server = await startAgentServer({ node: host, token: 'a-token-of-at-least-16-chars', host: '127.0.0.1', port: 0, staticDir: rendererDir });
  const sockets: Socket[] = [];
  t.after(async () => {
    for (const socket of sockets) socket.destroy();
    await server.close();
    await host.close();
    await node.close();
  });
  const port = Number(new URL(server.url).port);
  // Long after the start, with no call: quiet at once.
  await new Promise((resolve) => setTimeout(resolve, QUIET_MS + 50));
  let asked = performance.now();
  await server.quiet(QUIET_MS);
  assert.ok(performance.now() - asked < QUIET_MS, 'no call: quiet');

  // Timed from before the connect: the agent, in this process, may see the connection before the client hears back.
  const connecting = performance.now();
  const client = connect(port, '127.0.0.1');
  sockets.push(client);
  await once(client, 'connect');
  await server.quiet(QUIET_MS);
  assert.ok(performance.now() - connecting >= QUIET_MS, `quiet ${(performance.now() - connecting).toFixed(0)} ms after a client connected`);

  // Connected while the thread is held, as by a cold listing: the kernel accepts it; the agent has not seen it yet.
  const queued = connect(port, '127.0.0.1');
  sockets.push(queued);
  const heldUntil = Date.now() + 300;
  while (Date.now() < heldUntil) {
    // the agent busy
  }
  asked = performance.now();
  await server.quiet(QUIET_MS);
  assert.ok(performance.now() - asked >= QUIET_MS, `quiet ${(performance.now() - asked).toFixed(0)} ms after a busy spell a client connected in`);
});
