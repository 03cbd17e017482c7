import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { WebSocket as WsClient, WebSocketServer } from 'ws';
import type { WebSocket as WsSocket } from 'ws';
import { HangarError } from '../../../shared/errors.ts';
import type { NodeEvent } from '../../../shared/types.ts';
import { PING_METHOD, WS_PROTOCOL, tokenProtocol } from '../../../shared/wire.ts';
import type { WireRequest } from '../../../shared/wire.ts';
import type { ConnectionStatus, Transport } from './transport.ts';
import { UNAUTHORIZED_CLOSE, createWebSocketTransport } from './websocket.ts';

const TOKEN = 'good-token';

/**
 * A small real agent stand-in: checks the token subprotocol and answers `info` and pings, fails `upgrade`. While
 * `frozen`, it holds every ping, as a stopped process does, and answers them all when it thaws.
 */
async function startServer() {
  const server = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    handleProtocols: (protocols) => (protocols.has(WS_PROTOCOL) ? WS_PROTOCOL : false),
  });
  await once(server, 'listening');
  const sockets = new Set<WsSocket>();
  const held: (() => void)[] = [];
  let frozen = false;
  server.on('connection', (socket, request) => {
    const offered = (request.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
    if (!offered.includes(tokenProtocol(TOKEN))) {
      socket.close(UNAUTHORIZED_CLOSE, 'bad token');
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('message', (data) => {
      const request = JSON.parse(String(data)) as WireRequest;
      const pong = () => socket.send(JSON.stringify({ id: request.id, result: null }));
      if (request.method === PING_METHOD) {
        if (frozen) held.push(pong);
        else pong();
      } else if (request.method === 'info') socket.send(JSON.stringify({ id: request.id, result: { id: 'local', params: request.params } }));
      else if (request.method === 'upgrade') socket.send(JSON.stringify({ id: request.id, error: { code: 'conflict', message: 'echo: busy' } }));
      // Any other method is left unanswered, like a slow job.
    });
  });
  const { port } = server.address() as AddressInfo;
  const push = (event: NodeEvent) => {
    for (const socket of sockets) socket.send(JSON.stringify({ event }));
  };
  const dropAll = () => {
    for (const socket of sockets) socket.terminate();
  };
  const freeze = () => (frozen = true);
  const thaw = () => {
    frozen = false;
    for (const pong of held.splice(0)) pong();
  };
  return { url: `ws://127.0.0.1:${port}/api/ws`, server, push, dropAll, sockets, freeze, thaw };
}

function waitForStatus(transport: Transport, wanted: ConnectionStatus): Promise<void> {
  if (transport.status() === wanted) return Promise.resolve();
  return new Promise((resolve) => {
    const off = transport.onStatus((status) => {
      if (status === wanted) {
        off();
        resolve();
      }
    });
  });
}

function open(url: string, token: string | null, ping: { pingIntervalMs?: number; pingDeadlineMs?: number } = {}) {
  return createWebSocketTransport({ url, token, WebSocketImpl: WsClient as unknown as typeof WebSocket, initialBackoffMs: 20, maxBackoffMs: 100, ...ping });
}

test('answers calls, turns error envelopes into HangarErrors and delivers pushed events', async (t) => {
  const agent = await startServer();
  const transport = open(agent.url, TOKEN);
  t.after(() => {
    transport.close();
    agent.server.close();
  });

  // Queued before the socket opens, sent once it does.
  const info = await transport.bridge.info({ node: 'local' });
  assert.deepEqual(info, { id: 'local', params: { node: 'local' } });
  assert.equal(transport.status(), 'open');

  await assert.rejects(transport.bridge.upgrade({ node: 'local', name: 'echo' }), (error: unknown) => {
    assert.ok(error instanceof HangarError);
    assert.equal(error.code, 'conflict');
    assert.equal(error.message, 'echo: busy');
    return true;
  });

  const received = new Promise<NodeEvent>((resolve) => transport.bridge.onEvent(resolve));
  const event: NodeEvent = { type: 'backend-removed', node: 'local', name: 'echo' };
  agent.push(event);
  assert.deepEqual(await received, event);
});

test('a rejected token stops retrying until sign-in, then queued calls go through', async (t) => {
  const agent = await startServer();
  const transport = open(agent.url, 'wrong');
  t.after(() => {
    transport.close();
    agent.server.close();
  });
  await waitForStatus(transport, 'unauthorized');
  const answer = transport.bridge.info({ node: 'local' });
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(transport.status(), 'unauthorized', 'does not reconnect with a rejected token');

  transport.signIn!(TOKEN);
  assert.deepEqual(await answer, { id: 'local', params: { node: 'local' } });
  assert.equal(transport.status(), 'open');
});

test('reconnects after the link drops and fails the calls that were in flight', async (t) => {
  const agent = await startServer();
  const transport = open(agent.url, TOKEN);
  t.after(() => {
    transport.close();
    agent.server.close();
  });
  await waitForStatus(transport, 'open');
  const statuses: ConnectionStatus[] = [];
  transport.onStatus((status) => statuses.push(status));

  const [socket] = agent.sockets;
  const arrived = once(socket!, 'message');
  const unanswered = transport.bridge.jobs({ node: 'local' });
  await arrived;
  agent.dropAll();
  await assert.rejects(unanswered, /connection to the agent closed/);
  await waitForStatus(transport, 'open');
  assert.deepEqual(statuses, ['reconnecting', 'open']);
  assert.deepEqual(await transport.bridge.info({ node: 'local' }), { id: 'local', params: { node: 'local' } });
});

test('a call made while the link is down fails at once and is never sent after reconnecting', async (t) => {
  const agent = await startServer();
  const transport = open(agent.url, TOKEN);
  t.after(() => {
    transport.close();
    agent.server.close();
  });
  await waitForStatus(transport, 'open');
  const received: string[] = [];
  agent.server.on('connection', (socket) => socket.on('message', (data) => received.push((JSON.parse(String(data)) as WireRequest).method)));
  const dropped = new Promise<PromiseSettledResult<unknown>>((resolve) => {
    const off = transport.onStatus((status) => {
      if (status !== 'reconnecting') return;
      off();
      void Promise.allSettled([transport.bridge.upgrade({ node: 'local', name: 'echo' })]).then(([result]) => resolve(result!)); // clicked while the link is down
    });
  });
  agent.dropAll();
  const result = await dropped;
  assert.equal(result.status, 'rejected');
  assert.match(String((result as PromiseRejectedResult).reason), /cannot be reached; nothing was sent/);
  await waitForStatus(transport, 'open');
  assert.deepEqual(await transport.bridge.info({ node: 'local' }), { id: 'local', params: { node: 'local' } });
  assert.deepEqual(received.filter((method) => method !== PING_METHOD), ['info'], 'the dropped call was not replayed on the new socket');
});

test('an agent that stops answering pings turns the link unresponsive, drops new calls, and comes back when it answers', async (t) => {
  const agent = await startServer();
  const transport = open(agent.url, TOKEN, { pingIntervalMs: 40, pingDeadlineMs: 60 });
  t.after(() => {
    transport.close();
    agent.server.close();
  });
  await waitForStatus(transport, 'open');
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(transport.status(), 'open', 'answered pings keep the link open');
  const statuses: ConnectionStatus[] = [];
  transport.onStatus((status) => statuses.push(status));

  agent.freeze();
  const frozenAt = Date.now();
  await waitForStatus(transport, 'unresponsive');
  assert.ok(Date.now() - frozenAt <= 40 + 60 + 50, `unresponsive after ${Date.now() - frozenAt} ms`);
  await assert.rejects(transport.bridge.upgrade({ node: 'local', name: 'echo' }), /not answering; nothing was sent/);

  agent.thaw();
  await waitForStatus(transport, 'open');
  assert.deepEqual(statuses, ['unresponsive', 'open'], 'the socket itself stayed up: no reconnect');
  assert.deepEqual(await transport.bridge.info({ node: 'local' }), { id: 'local', params: { node: 'local' } });
});
