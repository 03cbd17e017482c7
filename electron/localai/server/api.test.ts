import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { LocalAiServerApi } from './api.ts';

test('a load retried after its cooldown that then never ends is said as missing the whole wait the caller gave', async (t) => {
  const held: ServerResponse[] = [];
  let loads = 0;
  const server = createServer((request, response) => {
    request.resume();
    if (request.url !== '/backend/load') return void response.writeHead(404).end();
    loads += 1;
    if (loads === 1) {
      response.writeHead(500, { 'content-type': 'application/json' });
      return void response.end(JSON.stringify({ loaded: null, message: 'failed to load model: model "m" load is in cooldown after a recent failure; retry after 1s' }));
    }
    held.push(response);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    for (const response of held) response.destroy();
    server.close();
  });
  const api = new LocalAiServerApi(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, null);
  await assert.rejects(api.load('m', 2500), /no whole answer to \/backend\/load within 2\.5 s$/);
  assert.equal(loads, 2);
});
