import { timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { hostname, networkInterfaces } from 'node:os';
import { extname, join, normalize, sep } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import type { HangarApi } from '../../shared/api.ts';
import type { NodeEvent } from '../../shared/types.ts';
import { WS_PATH, WS_PROTOCOL, type WireMessage, type WireResponse } from '../../shared/wire.ts';
import { ConnectionGuard, preAuthLimits } from './connection-guard.ts';
import { dispatch } from './dispatch.ts';

export interface AgentServerOptions {
  node: HangarApi & { watch(): () => void; on(event: 'event', listener: (e: NodeEvent) => void): unknown; off(event: 'event', listener: (e: NodeEvent) => void): unknown };
  token: string;
  host: string;
  port: number;
  /** The built renderer, served at `/`. */
  staticDir: string;
}

export interface AgentServer {
  url: string;
  /** Resolves once no call has arrived and no reply has gone for `ms`. */
  quiet(ms: number): Promise<void>;
  close(): Promise<void>;
}

const TOKEN_PREFIX = 'hangar.token.';
const CLOSE_UNAUTHORIZED = 4401;
const CLOSE_UNSUPPORTED = 1003;
const MAX_MESSAGE_BYTES = 1 << 20;
/** Replies and events queued for a peer that stopped reading, past which it is dropped rather than buffered for. */
const MAX_QUEUED_BYTES = 16 << 20;
/** An HTTP request, or a WebSocket upgrade, must have sent its headers within this. */
const HEADERS_TIMEOUT_MS = 5000;
const REQUEST_TIMEOUT_MS = 10_000;
/** An HTTP connection (the renderer's files) with no traffic either way for this long is closed. */
const IDLE_TIMEOUT_MS = 15_000;
/** How often Node looks for connections past those deadlines (its default is 30 s). */
const DEADLINE_CHECK_MS = 1000;
/** A socket refused for its token gets this long to take its close frame before it is cut. */
const REFUSED_LINGER_MS = 1000;
/** Shutdown waits at most this long for connections to go. */
const CLOSE_DEADLINE_MS = 2000;

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.map': 'application/json',
  '.woff2': 'font/woff2',
};

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/**
 * HTTP + WebSocket host for a node: serves the renderer and carries NodeApi calls and events, behind a token.
 * Connections that have not presented the token are capped and held to tight deadlines (see ConnectionGuard).
 */
export async function startAgentServer(options: AgentServerOptions): Promise<AgentServer> {
  const hosts = allowedHostnames(options.host);
  const guard = new ConnectionGuard(preAuthLimits());
  const http = createServer(
    { headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS, connectionsCheckingInterval: DEADLINE_CHECK_MS },
    (req, res) => {
      if (!allowedHost(req, hosts)) return reply(res, 421, 'unknown host');
      serveStatic(options.staticDir, req, res).catch(() => res.destroy());
    },
  );
  http.timeout = IDLE_TIMEOUT_MS;
  http.on('connection', (socket: Socket) => guard.admit(socket));
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_MESSAGE_BYTES,
    // Large replies (a gallery of a thousand entries, with descriptions shared by many builds) go compressed to a
    // peer on another machine, at the fastest level: JSON shrinks about 8× even so.
    perMessageDeflate: { threshold: 16 * 1024, zlibDeflateOptions: { level: 1 } },
    handleProtocols: (protocols) => (protocols.has(WS_PROTOCOL) ? WS_PROTOCOL : false),
  });

  // Every event is encoded once, for every viewer.
  const viewers = new Set<WebSocket>();
  const broadcast = (event: NodeEvent) => {
    const text = JSON.stringify({ event } satisfies WireMessage);
    for (const ws of viewers) sendText(ws, text);
  };
  options.node.on('event', broadcast);

  const calls = new CallActivity();

  // A peer that breaks the protocol (bad frame, oversized message, reset) costs only its own connection.
  wss.on('error', () => undefined);
  http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    try {
      if (!isWebSocketPath(req) || !allowedHost(req, hosts) || !sameOrigin(req)) return refuse(socket, '403 Forbidden');
      const admitted = tokenMatches(presentedToken(req), options.token);
      if (admitted) guard.authenticated(socket as Socket);
      wss.handleUpgrade(req, socket, head, (ws) => {
        // ws itself closes a socket that broke the protocol, with the right close code (1002, 1007, 1009).
        ws.on('error', () => undefined);
        if (!admitted) {
          ws.close(CLOSE_UNAUTHORIZED, 'bad token');
          setTimeout(() => ws.terminate(), REFUSED_LINGER_MS).unref();
          return;
        }
        if (onThisMachine(req.socket.remoteAddress)) uncompressed.add(ws);
        serveSocket(ws, options.node, viewers, calls);
      });
    } catch {
      socket.destroy();
    }
  });

  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, options.host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  // Accepting can fail for a moment (out of file descriptors); the server goes on listening.
  http.on('error', () => undefined);
  // A client connecting is a call on its way: what waits for quiet waits for it too.
  http.on('connection', () => calls.seen());
  const address = http.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    quiet: (ms) => calls.quiet(ms),
    close: () =>
      new Promise<void>((resolve) => {
        options.node.off('event', broadcast);
        http.close(() => resolve());
        wss.close();
        guard.destroyAll();
        setTimeout(resolve, CLOSE_DEADLINE_MS).unref();
      }),
  };
}

/** The 403 goes out, then the socket goes: a refused peer cannot keep it half-open by not reading. */
function refuse(socket: Duplex, status: string): void {
  socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () => socket.destroy());
}

function isWebSocketPath(req: IncomingMessage): boolean {
  try {
    return new URL(req.url ?? '/', 'http://agent').pathname === WS_PATH;
  } catch {
    return false;
  }
}

/**
 * When a connection or a call last arrived or a call was answered, so work nobody waits for can keep out of the way
 * of calls.
 */
class CallActivity {
  private last = performance.now();

  seen(): void {
    this.last = performance.now();
  }

  async quiet(ms: number): Promise<void> {
    // A client that connected while this process was busy (a cold listing at 5,000 takes a few hundred ms) waits in
    // the kernel's queue, unseen: two turns of the loop, the second beginning with a poll, let it in first.
    await nextTurn();
    await nextTurn();
    return new Promise((resolve) => {
      const check = () => {
        const left = this.last + ms - performance.now();
        if (left <= 0) resolve();
        else setTimeout(check, left).unref();
      };
      check();
    });
  }
}

function serveSocket(ws: WebSocket, node: AgentServerOptions['node'], viewers: Set<WebSocket>, calls: CallActivity): void {
  viewers.add(ws);
  // A peer sees the cluster's events as they come, so the cluster is watched while it is connected.
  const unwatch = node.watch();
  ws.on('close', () => {
    viewers.delete(ws);
    unwatch();
  });
  ws.on('message', (data, isBinary) => {
    if (isBinary) return ws.close(CLOSE_UNSUPPORTED, 'text frames only');
    calls.seen();
    dispatch(node, data.toString())
      .then((response) => {
        calls.seen();
        sendText(ws, responseData(response));
      })
      .catch(() => ws.terminate());
  });
}

/**
 * The encoded JSON of frozen values: a node hands out the same frozen views while nothing in them changed, and the
 * same frozen views in a new list when only some of them changed (a listing after a delete), so each is made once.
 */
const frozenBytes = new WeakMap<object, Buffer>();
const [OPEN_LIST, COMMA, CLOSE_LIST, CLOSE] = [0x5b, 0x2c, 0x5d, 0x7d];

function jsonBytes(value: unknown): Buffer {
  if (typeof value !== 'object' || value === null || !Object.isFrozen(value)) return Buffer.from(JSON.stringify(value));
  let bytes = frozenBytes.get(value);
  if (bytes === undefined) frozenBytes.set(value, (bytes = Buffer.from(JSON.stringify(value))));
  return bytes;
}

/**
 * Exactly JSON.stringify(response). A list's bytes are copied from its items' into one buffer: thousands of views make
 * megabytes, and each buffer as large as the reply is memory the kernel hands over page by page.
 */
function responseData(response: WireResponse): string | Buffer {
  if (!('result' in response)) return JSON.stringify(response);
  const { id, result } = response;
  const head = `{"id":${id},"result":`;
  if (!Array.isArray(result)) return Buffer.concat([Buffer.from(head), jsonBytes(result), Buffer.of(CLOSE)]);
  const items = result.map((item: unknown) => jsonBytes(item ?? null));
  // The head, "[", the items with a comma between each two, "]}".
  const size = head.length + 1 + items.reduce((sum, item) => sum + item.length, 0) + Math.max(items.length - 1, 0) + 2;
  const bytes = Buffer.allocUnsafe(size);
  let at = bytes.write(head);
  bytes[at++] = OPEN_LIST;
  for (const [i, item] of items.entries()) {
    if (i > 0) bytes[at++] = COMMA;
    at += item.copy(bytes, at);
  }
  bytes[at++] = CLOSE_LIST;
  bytes[at] = CLOSE;
  return bytes;
}

/** Peers on this machine: compressing for them costs both ends CPU and saves no network. */
const uncompressed = new WeakSet<WebSocket>();

function onThisMachine(address: string | undefined): boolean {
  return address === '::1' || /^(::ffff:)?127\./.test(address ?? '');
}

/** A text frame, whether its JSON comes as a string or already encoded. */
function sendText(ws: WebSocket, text: string | Buffer): void {
  if (ws.readyState !== ws.OPEN) return;
  // A peer that stopped reading would make the agent hold every event and reply for it.
  if (ws.bufferedAmount > MAX_QUEUED_BYTES) return ws.terminate();
  ws.send(text, { binary: false, compress: !uncompressed.has(ws) });
}

function presentedToken(req: IncomingMessage): string | null {
  const header = req.headers.authorization;
  if (header?.startsWith('Bearer ')) return header.slice('Bearer '.length);
  const protocols = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  const carried = protocols.find((p) => p.startsWith(TOKEN_PREFIX));
  return carried ? carried.slice(TOKEN_PREFIX.length) : null;
}

function tokenMatches(presented: string | null, expected: string): boolean {
  if (presented === null) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * DNS rebinding: a page on evil.example whose name resolves to 127.0.0.1 reaches the agent with its own Host.
 * Only loopback names and the name the agent listens on are answered.
 */
function allowedHostnames(listenHost: string): Set<string> {
  const names = new Set(['localhost', '127.0.0.1', '[::1]', listenHost.includes(':') ? `[${listenHost}]` : listenHost]);
  if (listenHost === '0.0.0.0' || listenHost === '::') {
    names.add(hostname());
    for (const addresses of Object.values(networkInterfaces())) {
      for (const a of addresses ?? []) names.add(a.family === 'IPv6' ? `[${a.address}]` : a.address);
    }
  }
  return names;
}

function allowedHost(req: IncomingMessage, names: Set<string>): boolean {
  const host = req.headers.host;
  if (host === undefined) return false;
  const name = host.replace(/:\d+$/, '').toLowerCase();
  return names.has(name) || /^127(\.\d{1,3}){3}$/.test(name);
}

/** Browsers always send Origin on a WebSocket; a page from another origin may not drive the node. */
function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

async function serveStatic(root: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') return reply(res, 405, 'method not allowed');
  let pathname: string;
  try {
    pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://agent').pathname);
  } catch {
    return reply(res, 400, 'bad path');
  }
  const relative = normalize(pathname === '/' ? '/index.html' : pathname).replace(/^([/\\])+/, '');
  const file = join(root, relative);
  if (relative.startsWith('..') || !file.startsWith(root.endsWith(sep) ? root : root + sep)) return reply(res, 404, 'not found');
  const info = await stat(file).catch(() => null);
  if (!info?.isFile()) return reply(res, 404, 'not found');
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
    'content-length': info.size,
    'cache-control': relative === 'index.html' ? 'no-cache' : 'max-age=3600',
  });
  if (req.method === 'HEAD') return void res.end();
  // Unlike pipe(), pipeline closes the file when the peer goes away mid-download.
  await pipeline(createReadStream(file), res);
}

function reply(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8' });
  res.end(text);
}
