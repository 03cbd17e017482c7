import { timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { extname, join, normalize, sep } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import type { HangarApi } from '../../shared/api.ts';
import type { NodeEvent } from '../../shared/types.ts';
import { WS_PATH, WS_PROTOCOL, type WireMessage } from '../../shared/wire.ts';
import { dispatch } from './dispatch.ts';

export interface AgentServerOptions {
  node: HangarApi & { on(event: 'event', listener: (e: NodeEvent) => void): unknown; off(event: 'event', listener: (e: NodeEvent) => void): unknown };
  token: string;
  host: string;
  port: number;
  /** The built renderer, served at `/`. */
  staticDir: string;
}

export interface AgentServer {
  url: string;
  close(): Promise<void>;
}

const TOKEN_PREFIX = 'hangar.token.';
const CLOSE_UNAUTHORIZED = 4401;
const CLOSE_UNSUPPORTED = 1003;
const MAX_MESSAGE_BYTES = 1 << 20;

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

/** HTTP + WebSocket host for a node: serves the renderer and carries NodeApi calls and events, behind a token. */
export async function startAgentServer(options: AgentServerOptions): Promise<AgentServer> {
  const hosts = allowedHostnames(options.host);
  const http = createServer((req, res) => {
    if (!allowedHost(req, hosts)) return reply(res, 421, 'unknown host');
    void serveStatic(options.staticDir, req, res);
  });
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_MESSAGE_BYTES,
    // Large replies (a gallery of a thousand entries, with descriptions shared by many builds) go compressed.
    perMessageDeflate: { threshold: 16 * 1024 },
    handleProtocols: (protocols) => (protocols.has(WS_PROTOCOL) ? WS_PROTOCOL : false),
  });

  // A peer that breaks the protocol (bad frame, oversized message, reset) costs only its own connection.
  wss.on('error', () => undefined);
  http.on('upgrade', (req, socket, head) => {
    socket.on('error', () => socket.destroy());
    const path = new URL(req.url ?? '/', 'http://agent').pathname;
    if (path !== WS_PATH || !allowedHost(req, hosts) || !sameOrigin(req)) {
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      // ws itself closes a socket that broke the protocol, with the right close code (1002, 1007, 1009).
      ws.on('error', () => undefined);
      if (!tokenMatches(presentedToken(req), options.token)) {
        ws.close(CLOSE_UNAUTHORIZED, 'bad token');
        return;
      }
      serveSocket(ws, options.node);
    });
  });

  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, options.host, () => resolve());
  });
  const address = http.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close();
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

function serveSocket(ws: WebSocket, node: AgentServerOptions['node']): void {
  const send = (message: WireMessage) => {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
  };
  const onEvent = (event: NodeEvent) => send({ event });
  node.on('event', onEvent);
  ws.on('close', () => node.off('event', onEvent));
  ws.on('message', (data, isBinary) => {
    if (isBinary) return ws.close(CLOSE_UNSUPPORTED, 'text frames only');
    void dispatch(node, data.toString()).then(send);
  });
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
  try {
    const info = await stat(file);
    if (!info.isFile()) return reply(res, 404, 'not found');
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
      'content-length': info.size,
      'cache-control': relative === 'index.html' ? 'no-cache' : 'max-age=3600',
    });
    if (req.method === 'HEAD') return void res.end();
    createReadStream(file).pipe(res);
  } catch {
    reply(res, 404, 'not found');
  }
}

function reply(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8' });
  res.end(text);
}
