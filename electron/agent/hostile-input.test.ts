// Hostile peers against a real agent: raw malformed WebSocket frames, oversized messages, malformed requests,
// foreign Host headers and weak tokens. The agent must answer afterwards and its backends must live on.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmod, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { get as httpGet, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { WS_PATH, WS_PROTOCOL, tokenProtocol } from '../../shared/wire.ts';
import { isAlive } from '../core/supervisor/identity.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { frame, rawSocket, upgradeRequest } from './hostile-peers.ts';
import { hangar, json, openFds, startAgent, until, type Agent } from './test-agent.ts';

/** Sends a WebSocket upgrade by hand, offering no compression. */
function rawUpgrade(url: string, token: string | null): Promise<Socket> {
  return rawSocket(url, upgradeRequest(new URL(url).host, token ? `${WS_PROTOCOL}, ${tokenProtocol(token)}` : WS_PROTOCOL));
}

/** Completes a WebSocket handshake by hand, then writes raw bytes; resolves when the agent closes the socket. */
async function rawSession(url: string, token: string | null, bytes: Buffer): Promise<string> {
  const socket = await rawUpgrade(url, token);
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    if (received === '') socket.write(bytes);
    received += chunk.toString('latin1');
  });
  socket.on('error', () => undefined);
  await once(socket, 'close');
  return received;
}

/** fetch() will not send a Host of our choosing, so this uses http.get. */
async function statusFor(url: string, host: string): Promise<number> {
  const [response] = (await once(httpGet(url, { headers: { host } }), 'response')) as [IncomingMessage];
  response.resume();
  return response.statusCode ?? 0;
}

async function openSocket(url: string, token: string, options: WebSocket.ClientOptions = {}): Promise<WebSocket> {
  const ws = new WebSocket(new URL(WS_PATH, url.replace(/^http/, 'ws')).href, [WS_PROTOCOL, tokenProtocol(token)], options);
  await once(ws, 'open');
  return ws;
}

async function answer(ws: WebSocket, text: string): Promise<{ id: unknown; error?: { code: string; message: string } }> {
  const reply = once(ws, 'message');
  ws.send(text);
  const [data] = (await reply) as [Buffer];
  return JSON.parse(data.toString()) as { id: unknown; error?: { code: string; message: string } };
}

describe('the agent against hostile peers', () => {
  let root: string;
  let agent: Agent;
  let token: string;
  let backendPid: number;
  let stderr = '';

  before(async () => {
    root = await tempDir('hostile');
    const gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    agent = await startAgent(join(root, 'home'), gallery);
    agent.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    token = (await readFile(join(agent.home, 'state', 'token'), 'utf8')).trim();
    assert.equal((await hangar(agent, 'install', 'echo')).code, 0);
    backendPid = (await json<{ pid: number }>(agent, 'load', 'echo', 'm1')).pid;
  });

  after(async () => {
    agent.child.kill('SIGTERM');
    await once(agent.child, 'exit');
    await rm(root, { recursive: true, force: true });
  });

  async function stillServing(): Promise<void> {
    assert.equal(agent.child.exitCode, null, 'the agent is still running');
    const [listed] = await json<Array<{ pid: number; state: string }>>(agent, 'ps');
    assert.equal(listed?.pid, backendPid);
    assert.ok(isAlive(backendPid), 'the backend is still alive');
  }

  const malformed: Array<[string, Buffer]> = [
    ['an unmasked frame', frame(0x1, Buffer.from('{}'), { masked: false })],
    ['RSV bits set', frame(0x1, Buffer.from('{}'), { rsv: 0x70 })],
    ['an unknown opcode', frame(0x3, Buffer.from('x'))],
    ['invalid UTF-8 in a text frame', frame(0x1, Buffer.from([0xff, 0xfe, 0xfd]))],
    ['a declared length of 1 TiB', frame(0x1, Buffer.from('x'), { declaredLength: 1n << 40n })],
    ['a fragmented control frame', Buffer.from([0x09, 0x80, 1, 2, 3, 4])],
  ];

  for (const withToken of [false, true]) {
    for (const [what, bytes] of malformed) {
      test(`${what} ${withToken ? 'with' : 'without'} a token closes that socket only`, async () => {
        const received = await rawSession(agent.url, withToken ? token : null, bytes);
        assert.match(received, /^HTTP\/1\.1 101 /);
        await stillServing();
      });
    }
  }

  /** Sends an info request padded to `bytes` and returns the close code the agent answers with. */
  async function closeCodeForPadded(ws: WebSocket, bytes: number): Promise<number> {
    ws.on('error', () => undefined);
    const closed = once(ws, 'close');
    ws.send(JSON.stringify({ id: 1, method: 'info', params: { node: 'local', pad: 'x'.repeat(bytes) } }));
    const [code] = (await closed) as [number];
    return code;
  }

  test('an authenticated text message over 1 MiB is refused with close code 1009', async () => {
    const ws = await openSocket(agent.url, token, { perMessageDeflate: false });
    assert.equal(ws.extensions, '', 'sent as it is');
    assert.equal(await closeCodeForPadded(ws, 2 << 20), 1009);
    await stillServing();
  });

  test('compression is offered (replies to another machine go compressed), and a compressed message that inflates past 1 MiB is refused with 1009', async () => {
    const ws = await openSocket(agent.url, token);
    assert.match(ws.extensions, /permessage-deflate/, 'compression was negotiated');
    assert.equal(await closeCodeForPadded(ws, 8 << 20), 1009);
    await stillServing();
  });

  test('malformed requests each get an error reply, never silence', async () => {
    const ws = await openSocket(agent.url, token);
    try {
      for (const text of ['{', 'null', '[]', '{"id":1e308,"method":"info","params":{"node":"local"}}', '{"id":1,"method":"info"} trailing']) {
        const reply = await answer(ws, text);
        assert.equal(reply.id, null, text);
        assert.equal(reply.error?.code, 'invalid-request', text);
      }
      const unknown = await answer(ws, '{"id":7,"method":"rmrf","params":{}}');
      assert.deepEqual(unknown, { id: 7, error: { code: 'invalid-request', message: 'unknown method "rmrf"' } });
    } finally {
      ws.close();
    }
    await stillServing();
  });

  test('an upgrade whose path is not a URL (GET //[) is refused, not fatal', async () => {
    for (const path of ['//[', '//a:b:c', 'http://[::1', '//%']) {
      const socket = await rawSocket(agent.url, upgradeRequest(new URL(agent.url).host, WS_PROTOCOL, path));
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
      await new Promise((resolve) => socket.once('close', resolve));
      assert.match(received, /^HTTP\/1\.1 (403|400) /, path);
    }
    await stillServing();
  });

  test('a socket refused for its token that never answers the close frame is cut within seconds', async () => {
    const started = Date.now();
    const received = await rawSession(agent.url, 'not-the-token-0123456789', Buffer.alloc(0));
    assert.match(received, /^HTTP\/1\.1 101 /);
    assert.ok(Date.now() - started < 5000, `held for ${Date.now() - started} ms`);
  });

  test('downloads abandoned half-way leave no file open in the agent', async () => {
    const pid = agent.child.pid!;
    const assets = await readdir('dist/renderer/assets');
    const biggest = (await Promise.all(assets.map(async (name) => ({ name, size: (await stat(join('dist/renderer/assets', name))).size })))).sort((a, b) => b.size - a.size)[0]!;
    const before = openFds(pid);
    for (let i = 0; i < 50; i++) {
      const socket = await rawSocket(agent.url, `GET /assets/${biggest.name} HTTP/1.1\r\nHost: ${new URL(agent.url).host}\r\n\r\n`);
      await once(socket, 'data');
      socket.destroy();
    }
    await until('the agent to close what 50 abandoned downloads opened', async () => (openFds(pid) <= before + 2 ? true : undefined), 5000);
    await stillServing();
  });

  test('twenty viewers at once each get every event, and the agent warns of nothing', async () => {
    const viewers = await Promise.all(Array.from({ length: 20 }, () => openSocket(agent.url, token)));
    const heard = viewers.map((ws) => once(ws, 'message') as Promise<[Buffer]>);
    assert.equal((await hangar(agent, 'settings', 'auto-upgrade-hours', '7')).code, 0);
    for (const [data] of await Promise.all(heard)) assert.equal((JSON.parse(data.toString()) as { event: { type: string } }).event.type, 'settings');
    viewers.forEach((ws) => ws.close());
    assert.doesNotMatch(stderr, /warning/i);
  });

  test('a foreign Host header (DNS rebinding) is refused on HTTP and WebSocket', async () => {
    const { port } = new URL(agent.url);
    assert.equal(await statusFor(agent.url, `evil.example:${port}`), 421);
    assert.equal(await statusFor(agent.url, `localhost:${port}`), 200);
    const ws = new WebSocket(new URL(WS_PATH, agent.url.replace(/^http/, 'ws')).href, [WS_PROTOCOL, tokenProtocol(token)], {
      headers: { host: `evil.example:${port}` },
    });
    const [error] = (await once(ws, 'error')) as [Error];
    assert.match(error.message, /403/);
    await stillServing();
  });
});

describe('agent start-up: tokens and galleries', () => {
  let root: string;
  let gallery: string;

  before(async () => {
    root = await tempDir('tokens');
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, []);
  });

  after(() => rm(root, { recursive: true, force: true }));

  test('a token shorter than 16 characters is refused at start', async () => {
    const child = spawn(process.execPath, ['dist/agent/cli.js', 'agent', '--home', join(root, 'short'), '--gallery', gallery, '--listen', '127.0.0.1:0', '--token', 'short'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number];
    assert.notEqual(code, 0);
    assert.match(stderr, /token is too short: use at least 16 characters/);
  });

  test('a token file that is missing or a directory is named in words, with no errno', async () => {
    const refusal = async (file: string) => {
      const child = spawn(process.execPath, ['dist/agent/cli.js', 'agent', '--home', join(root, 'no-file'), '--gallery', gallery, '--listen', '127.0.0.1:0', '--token-file', file], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const [code] = (await once(child, 'exit')) as [number];
      return [code, stderr];
    };
    const missing = join(root, 'no-such-token');
    assert.deepEqual(await refusal(missing), [6, `hangar: the token file ${missing} does not exist\n`]);
    assert.deepEqual(await refusal(root), [6, `hangar: the token file ${root} is a directory, not a file\n`]);
  });

  test('a token from a file or HANGAR_TOKEN works, never shows in the command line, and is not printed to a non-terminal', async () => {
    const file = join(root, 'token.txt');
    await writeFile(file, 'from-a-file-0123456789\n', { mode: 0o600 });
    const fromFile = await startAgent(join(root, 'file-home'), gallery, ['--token-file', file]);
    try {
      const cmdline = await readFile(`/proc/${fromFile.child.pid}/cmdline`, 'utf8');
      assert.doesNotMatch(cmdline, /from-a-file/);
      assert.equal((await hangar(fromFile, '--token', 'from-a-file-0123456789', 'ls')).code, 0);
      assert.notEqual((await hangar(fromFile, '--token', 'another-token-0123456789', 'ls')).code, 0);
    } finally {
      fromFile.child.kill('SIGTERM');
      await once(fromFile.child, 'exit');
    }
    const fromEnv = await startAgent(join(root, 'env-home'), gallery, [], { ...process.env, HANGAR_TOKEN: 'from-the-environment-42' });
    let stderr = '';
    fromEnv.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      assert.equal((await hangar(fromEnv, '--token', 'from-the-environment-42', 'ls')).code, 0);
    } finally {
      fromEnv.child.kill('SIGTERM');
      await once(fromEnv.child, 'exit');
    }
    assert.match(stderr, /token in \$HANGAR_TOKEN/);
    assert.doesNotMatch(stderr, /from-the-environment-42/);
  });

  test('a gallery that cannot be read is reported by `hangar gallery`, not shown as an empty list', async () => {
    const broken = join(root, 'broken.yaml');
    await writeFile(broken, 'this: is: not: [valid yaml');
    const agent = await startAgent(join(root, 'broken-home'), broken);
    try {
      const result = await hangar(agent, 'gallery');
      assert.equal(result.code, 1);
      assert.match(result.stderr, /^hangar: warning: gallery "[^"]+": invalid YAML: /);
    } finally {
      agent.child.kill('SIGTERM');
      await once(agent.child, 'exit');
    }
  });

  test('an existing token file with loose permissions is tightened to 600', async () => {
    const home = join(root, 'loose');
    const first = await startAgent(home, gallery);
    first.child.kill('SIGTERM');
    await once(first.child, 'exit');
    const file = join(home, 'state', 'token');
    await chmod(file, 0o644);
    const second = await startAgent(home, gallery);
    try {
      assert.equal((await stat(file)).mode & 0o777, 0o600);
    } finally {
      second.child.kill('SIGTERM');
      await once(second.child, 'exit');
    }
  });
});

/** How many whole text frames `bytes` holds (server frames: unmasked). */
function textFrames(bytes: Buffer): number {
  let count = 0;
  for (let at = 0; at + 2 <= bytes.length; ) {
    const short = bytes[at + 1]! & 0x7f;
    const [length, header] = short === 126 ? [bytes.readUInt16BE(at + 2), 4] : short === 127 ? [Number(bytes.readBigUInt64BE(at + 2)), 10] : [short, 2];
    if (at + header + length > bytes.length) break;
    if ((bytes[at]! & 0x0f) === 0x1) count++;
    at += header + length;
  }
  return count;
}

/** Resolves once the process has used no CPU for half a second. */
async function idle(pid: number): Promise<void> {
  const cpu = async () => (await readFile(`/proc/${pid}/stat`, 'utf8')).replace(/.*\) /s, '').split(' ').slice(11, 13).join(' ');
  let last = '';
  await until(`pid ${pid} to go idle`, async () => {
    const now = await cpu();
    const still = now === last;
    last = now;
    await sleep(500);
    return still ? true : undefined;
  }, 60_000);
}

describe('a token holder that stops reading', () => {
  let root: string;
  let agent: Agent;

  before(async () => {
    root = await tempDir('slow-reader');
    const gallery = join(root, 'index.yaml');
    // 4,000 entries: every `gallery` reply is about a megabyte.
    await writeGallery(gallery, Array.from({ length: 4000 }, (_, i) => ({ name: `backend-${i}`, uri: `https://example.com/${'x'.repeat(160)}/${i}.tar.gz`, version: '1.0.0' })));
    agent = await startAgent(join(root, 'home'), gallery);
  });

  after(async () => {
    agent.child.kill('SIGTERM');
    await once(agent.child, 'exit');
    await rm(root, { recursive: true, force: true });
  });

  test('is dropped once 16 MiB of replies wait for it, rather than kept in memory', async () => {
    const requests = 60;
    const token = (await readFile(join(agent.home, 'state', 'token'), 'utf8')).trim();
    const socket = await rawUpgrade(agent.url, token);
    socket.on('error', () => undefined);
    const [handshake] = (await once(socket, 'data')) as [Buffer];
    assert.match(handshake.toString('latin1'), /^HTTP\/1\.1 101 /);
    socket.pause();
    // 60 replies of about a megabyte each would be held for this one peer.
    for (let id = 1; id <= requests; id++) socket.write(frame(0x1, Buffer.from(JSON.stringify({ id, method: 'gallery', params: { node: 'local' } }))));
    await idle(agent.child.pid!);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.resume();
    const closed = await Promise.race([new Promise((resolve) => socket.once('close', () => resolve(true))), sleep(15_000, false)]);
    const replies = textFrames(Buffer.concat(chunks));
    socket.destroy();
    assert.ok(closed, `the agent kept the socket open and sent ${replies} of ${requests} replies`);
    assert.ok(replies < requests, `all ${requests} replies were kept for a peer that did not read`);
    assert.equal((await hangar(agent, 'ps')).code, 0, 'the agent serves on');
  });
});
