// Test-only: an HTTP front for a real registry that demands bearer tokens (and serves them), and can misbehave
// on blob downloads: flip a byte, drop the connection halfway once, drip the bytes, or redirect to another server.
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxyBehaviour {
  /** Demand `Authorization: Bearer <token>` and serve tokens at /token. */
  bearer: boolean;
  /** Flip one byte in the middle of every blob body. */
  corruptBlobs: boolean;
  /** Destroy the connection halfway through the next full (non-Range) blob download, once. */
  dropNextBlob: boolean;
  /** Answer blob GETs with a 307 to this base URL + the request path. */
  redirectBlobsTo: string | null;
  /** Send blob bodies `bytes` at a time, one slice every `everyMs`. */
  dripBlobs: { bytes: number; everyMs: number } | null;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
}

export interface TestServer {
  url: string;
  host: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export interface RegistryProxy extends TestServer {
  behaviour: ProxyBehaviour;
  /** Scopes asked of /token, in order. */
  tokenRequests: string[];
}

const BLOB_PATH = /^\/v2\/.+\/blobs\/sha256:[a-f0-9]{64}$/;

export async function startRegistryProxy(upstream: string, behaviour: Partial<ProxyBehaviour> = {}): Promise<RegistryProxy> {
  const state: RegistryProxy = {
    url: '',
    host: '',
    requests: [],
    tokenRequests: [],
    behaviour: { bearer: false, corruptBlobs: false, dropNextBlob: false, redirectBlobsTo: null, dripBlobs: null, ...behaviour },
    close: async () => undefined,
  };
  let issued = 0;
  const server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://proxy');
    state.requests.push({ method: req.method!, path: url.pathname, headers: req.headers });
    const b = state.behaviour;
    if (url.pathname === '/token') {
      state.tokenRequests.push(url.searchParams.get('scope') ?? '');
      sendJson(res, 200, { token: `token-${++issued}`, expires_in: 300 });
      return;
    }
    if (b.bearer && !/^Bearer token-\d+$/.test(req.headers.authorization ?? '')) {
      const scope = `repository:${url.pathname.split('/').slice(2, -2).join('/')}:pull`;
      res.setHeader('www-authenticate', `Bearer realm="${state.url}/token",service="hangar-test",scope="${scope}"`);
      sendJson(res, 401, { errors: [{ code: 'UNAUTHORIZED' }] });
      return;
    }
    const isBlob = req.method === 'GET' && BLOB_PATH.test(url.pathname);
    if (isBlob && b.redirectBlobsTo) {
      res.writeHead(307, { location: `${b.redirectBlobsTo}${url.pathname}` }).end();
      return;
    }
    if (isBlob && b.dripBlobs) {
      forward(upstream, req, res, relayDripping(b.dripBlobs, res));
      return;
    }
    const hook = isBlob ? blobMisbehaviour(b, req) : null;
    forward(upstream, req, res, hook ? relayThrough(hook, res) : undefined);
  });
  const address = await listen(server);
  Object.assign(state, address, { close: () => close(server) });
  return state;
}

/** A plain server that records request headers and serves what `upstream` serves (e.g. blob storage). */
export async function startRecordingServer(upstream: string): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    requests.push({ method: req.method!, path: req.url!, headers: req.headers });
    forward(upstream, req, res);
  });
  const address = await listen(server);
  return { ...address, requests, close: () => close(server) };
}

type BodyHook = (chunk: Buffer, offset: number, total: number, res: ServerResponse) => Buffer | null;

function blobMisbehaviour(b: ProxyBehaviour, req: IncomingMessage): BodyHook | null {
  const full = !req.headers.range;
  const drop = full && b.dropNextBlob;
  if (drop) b.dropNextBlob = false;
  if (!drop && !b.corruptBlobs) return null;
  return (chunk, offset, total, res) => {
    const middle = Math.floor(total / 2);
    if (drop && offset + chunk.length > middle) {
      res.write(chunk.subarray(0, middle - offset));
      res.socket?.destroy();
      return null;
    }
    if (b.corruptBlobs && full && offset <= middle && middle < offset + chunk.length) {
      const copy = Buffer.from(chunk);
      copy[middle - offset] = copy[middle - offset]! ^ 0xff;
      return copy;
    }
    return chunk;
  };
}

/** Sends `req` on to `upstream` and hands its answer, headers already written, to `relay` (default: piped as is). */
function forward(upstream: string, req: IncomingMessage, res: ServerResponse, relay: (up: IncomingMessage) => void = (up) => up.pipe(res)): void {
  const headers = { ...req.headers, host: new URL(upstream).host };
  delete headers.authorization;
  const out = request(new URL(req.url!, upstream), { method: req.method, headers }, (up) => {
    res.writeHead(up.statusCode!, up.headers);
    relay(up);
  });
  out.on('error', () => res.destroy());
  req.pipe(out);
}

function relayThrough(hook: BodyHook, res: ServerResponse): (up: IncomingMessage) => void {
  return (up) => {
    const total = Number(up.headers['content-length'] ?? 0);
    let offset = 0;
    up.on('data', (chunk: Buffer) => {
      const out = hook(chunk, offset, total, res);
      offset += chunk.length;
      if (out === null) up.destroy();
      else res.write(out);
    });
    up.on('end', () => res.end());
  };
}

/** Relays the answer a slice at a time, pausing the upstream while each of its chunks drips out. */
function relayDripping(drip: { bytes: number; everyMs: number }, res: ServerResponse): (up: IncomingMessage) => void {
  return (up) => {
    let timer: NodeJS.Timeout | undefined;
    res.once('close', () => (clearInterval(timer), up.destroy()));
    up.on('data', (chunk: Buffer) => {
      up.pause();
      let offset = 0;
      timer = setInterval(() => {
        res.write(chunk.subarray(offset, (offset += drip.bytes)));
        if (offset < chunk.length) return;
        clearInterval(timer);
        up.resume();
      }, drip.everyMs);
    });
    up.on('end', () => res.end());
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function listen(server: Server): Promise<{ url: string; host: string }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, host: `127.0.0.1:${port}` };
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
