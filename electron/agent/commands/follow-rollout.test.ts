// Following a rollout when its host dies: the words say the rollout goes on elsewhere, whichever of the command's
// calls was in flight when the connection went.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import type { RolloutView } from '../../../shared/types.ts';
import { createWireClient, type SocketLike } from '../../../shared/wire-client.ts';
import type { WireRequest } from '../../../shared/wire.ts';
import { followRollout, upgradeFailed } from './follow-rollout.ts';

const running: RolloutView = {
  id: '89ac6f6c-ea69-4b26-ba46-252eb5573271',
  backend: 'echo',
  version: '2.0.0',
  on: 'all',
  maxParallel: 1,
  state: 'running',
  startedAt: new Date().toISOString(),
  finishedAt: null,
  coordinator: { id: '84d15c9895e9d69c', name: 'r1' },
  interrupted: null,
  nodes: [{ id: '84d15c9895e9d69c', name: 'r1', step: 'upgrading', reason: null, from: '1.0.0', to: '2.0.0' }],
};

test('an agent killed while the command asks for the rollout\'s record: the rollout is named, not a bare closed connection', async () => {
  // The host dies with the command's look at the record unanswered: its socket ends with no close frame (1006).
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  server.on('connection', (socket) => {
    socket.on('message', (data) => {
      const request = JSON.parse(String(data)) as WireRequest;
      if (request.method === 'rollouts') socket.terminate();
    });
  });
  await once(server, 'listening');
  const socket = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  await once(socket, 'open');
  const client = createWireClient(socket as unknown as SocketLike);
  try {
    await assert.rejects(
      followRollout(client, { json: true }, async () => running, upgradeFailed),
      new RegExp(`^Error: the agent closed its connection \\(1006\\) while it ran rollout ${running.id}: another viewer can see it interrupted and resume or roll it back \\(hangar rollouts\\)$`),
    );
  } finally {
    client.close();
    server.close();
  }
});
