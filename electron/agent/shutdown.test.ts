// SIGTERM against an agent that still holds connections of every kind, the hostile ones included: it closes them
// all, stops its backends and exits, within a few seconds.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { readdir, readFile, rm } from 'node:fs/promises';
import { Agent as HttpAgent, get as httpGet, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import WebSocket from 'ws';
import { tokenProtocol, WS_PATH, WS_PROTOCOL } from '../../shared/wire.ts';
import { isAlive } from '../core/supervisor/identity.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { frame, rawSocket, upgradeRequest } from './hostile-peers.ts';
import { hangar, json, startAgent, type Agent } from './test-agent.ts';

const EXIT_WITHIN_MS = 5000;

/** SIGTERM (or `signal`); resolves with the exit code and how long the agent took. */
async function terminate(agent: Agent, signal: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  const exited = once(agent.child, 'exit') as Promise<[number | null]>;
  agent.child.kill(signal);
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`the agent did not exit within ${EXIT_WITHIN_MS * 2} ms of SIGTERM`)), EXIT_WITHIN_MS * 2).unref());
  const [code] = await Promise.race([exited, timeout]);
  return { code, ms: Date.now() - started };
}

describe('agent shutdown with connections still open', () => {
  let root: string;
  let agent: Agent;
  let backendPid: number;
  let host: string;

  beforeEach(async () => {
    root = await tempDir('shutdown');
    const gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    agent = await startAgent(join(root, 'home'), gallery);
    host = new URL(agent.url).host;
    assert.equal((await hangar(agent, 'install', 'echo')).code, 0);
    backendPid = (await json<{ pid: number }>(agent, 'load', 'echo', 'm1')).pid;
  });

  afterEach(async () => {
    if (agent.child.exitCode === null && agent.child.signalCode === null) agent.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });

  async function assertStoppedCleanly(): Promise<void> {
    const { code, ms } = await terminate(agent);
    assert.equal(code, 0);
    assert.ok(ms < EXIT_WITHIN_MS, `the agent took ${ms} ms to exit`);
    assert.equal(isAlive(backendPid), false, 'its backend was stopped');
  }

  test('SIGHUP (the terminal that ran it closed) stops it as SIGTERM does; with keep-running on, its backends stay for the next start', async () => {
    const { code } = await terminate(agent, 'SIGHUP');
    assert.equal(code, 0);
    assert.equal(isAlive(backendPid), false, 'its backend was stopped');
    agent = await startAgent(agent.home, null);
    assert.equal((await hangar(agent, 'settings', 'keep-running', 'on')).code, 0);
    const kept = (await json<{ pid: number }>(agent, 'load', 'echo', 'm2')).pid;
    assert.equal((await terminate(agent, 'SIGHUP')).code, 0);
    assert.equal(isAlive(kept), true, 'keep-running: its backend outlives it');
    process.kill(kept, 'SIGKILL');
  });

  test("npm start's launcher passes a closing terminal's SIGHUP on: the agent it started stops", async () => {
    assert.equal((await terminate(agent)).code, 0);
    const launcher = spawn(process.execPath, ['scripts/start.mjs', '--home', agent.home, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const lines = createInterface({ input: launcher.stdout! });
    const started = await new Promise<string>((resolve) => lines.on('line', (line) => /listening on/.test(line) && resolve(line)));
    assert.match(started, /^hangar agent listening on http:\/\/127\.0\.0\.1:\d+$/);
    const [code] = await Promise.all([once(launcher, 'exit').then(([c]) => c as number | null), Promise.resolve(launcher.kill('SIGHUP'))]);
    assert.equal(code, 0, 'the agent stopped cleanly, and the launcher with it');
  });

  test('a refused upgrade (foreign Host) that writes a frame after the 403 and leaves does not keep SIGTERM out', async () => {
    const socket = await rawSocket(agent.url, upgradeRequest('evil.example', WS_PROTOCOL));
    const [answer] = (await once(socket, 'data')) as [Buffer];
    assert.match(answer.toString(), /^HTTP\/1\.1 403 /);
    socket.write(frame(0x1, Buffer.from('{"id":1,"method":"info","params":{"node":"local"}}')));
    socket.end();
    assert.equal((await hangar(agent, 'ps')).code, 0);
    await assertStoppedCleanly();
  });

  test('keep-alive, WebSocket, half-sent, refused and stalled connections are all closed at shutdown', async () => {
    const token = (await readFile(join(agent.home, 'state', 'token'), 'utf8')).trim();
    const keepAlive = new HttpAgent({ keepAlive: true });
    const [page] = (await once(httpGet(agent.url, { agent: keepAlive }), 'response')) as [IncomingMessage];
    page.resume();
    await once(page, 'end');
    const ws = new WebSocket(new URL(WS_PATH, agent.url.replace(/^http/, 'ws')).href, [WS_PROTOCOL, tokenProtocol(token)]);
    ws.on('error', () => undefined);
    await once(ws, 'open');
    const assets = await readdir('dist/renderer/assets');
    const held = [
      // Headers never finished.
      await rawSocket(agent.url, `GET ${WS_PATH} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\n`),
      // Refused for its Host, never read from, never closed.
      await rawSocket(agent.url, upgradeRequest('evil.example', WS_PROTOCOL)),
      // Refused for its token: the close frame is never answered.
      await rawSocket(agent.url, upgradeRequest(host, `${WS_PROTOCOL}, ${tokenProtocol('x'.repeat(32))}`)),
      // A download that stopped reading.
      await rawSocket(agent.url, `GET /assets/${assets.find((a) => a.endsWith('.js'))} HTTP/1.1\r\nHost: ${host}\r\n\r\n`),
    ];
    held.forEach((socket) => socket.pause());
    // once() would reject on the resets the agent sends; only the closing matters.
    const closed = [...held, ws].map((peer) => new Promise((resolve) => peer.once('close', resolve)));
    await assertStoppedCleanly();
    held.forEach((socket) => socket.resume());
    await Promise.all(closed);
    keepAlive.destroy();
  });
});
