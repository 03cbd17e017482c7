// A stand-in for a LocalAI frontend in distributed mode, written from LocalAI's code (core/http/routes/nodes.go,
// core/http/endpoints/localai/nodes.go, core/services/nodes/registry.go and health.go, core/http/auth): the worker
// self-service routes (register, heartbeat, with the registration token) and the admin routes Hangar reads (the node
// list, the backend galleries), behind an admin API key read as LocalAI reads it. A node registers by name (the same
// name keeps its id), is healthy or pending by auto-approval, goes offline when its heartbeat is stale and healthy
// again when it is fresh; an admin can approve, drain and resume it.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StandInFrontendOptions {
  apiKey: string;
  registrationToken: string;
  /** The backend galleries, as LocalAI's config lists them. */
  galleries: { url: string; name: string }[];
  autoApprove?: boolean;
  /** Workers of these names register pending even with auto-approval on. */
  pending?: string[];
  /** A node whose last heartbeat is older than this goes offline (LocalAI: 60 s). */
  staleMs?: number;
  /** How often the health monitor looks (LocalAI: 15 s). */
  checkMs?: number;
}

interface Node {
  id: string;
  name: string;
  node_type: string;
  address: string;
  http_address: string;
  status: string;
  total_vram: number;
  available_vram: number;
  reserved_vram: number;
  total_ram: number;
  available_ram: number;
  total_disk: number;
  available_disk: number;
  gpu_vendor: string;
  gpu_compute_capability: string;
  capability?: string;
  max_replicas_per_model: number;
  max_replicas_per_model_manually_set: boolean;
  vram_budget_manually_set: boolean;
  last_heartbeat: string;
  created_at: string;
  updated_at: string;
  labels: Record<string, string>;
}

export interface StandInFrontend {
  url: string;
  nodes(): Node[];
  /** What the admin UI does: approve a pending node, drain or resume one. */
  setStatus(id: string, status: 'healthy' | 'draining'): void;
  /** GET /backends/galleries answers `status` from now on, as a proxy in front of a struggling frontend does; null: it answers again. */
  failGalleries(status: number | null): void;
  /** Requests seen, by path (to check that Hangar only reads). */
  requests: { method: string; path: string; authorized: boolean }[];
  close(): Promise<void>;
}

const BODY_MAX = 64 * 1024;

export async function startStandInFrontend(options: StandInFrontendOptions): Promise<StandInFrontend> {
  const nodes = new Map<string, Node>();
  const requests: StandInFrontend['requests'] = [];
  const staleMs = options.staleMs ?? 60_000;
  let galleriesStatus: number | null = null;

  const health = setInterval(() => {
    for (const node of nodes.values()) {
      if (node.status === 'draining' || node.status === 'pending') continue;
      const stale = Date.now() - Date.parse(node.last_heartbeat) > staleMs;
      if (stale && node.status !== 'offline') node.status = 'offline';
      if (!stale && node.status === 'offline') node.status = 'healthy';
    }
  }, options.checkMs ?? 15_000);

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((error: Error) => json(res, 500, { error: { code: 500, message: error.message, type: 'node_error' } }));
  });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const method = req.method ?? 'GET';
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const admin = bearer === options.apiKey;
    requests.push({ method, path, authorized: admin });

    // Worker self-service: the registration token, as nodeTokenAuth reads it.
    if (path.startsWith('/api/node/')) {
      if (bearer !== options.registrationToken) return json(res, 401, { error: 'invalid registration token' });
      if (method === 'POST' && path === '/api/node/register') return register(JSON.parse(await body(req)) as Record<string, unknown>, res);
      const beat = /^\/api\/node\/([^/]+)\/heartbeat$/.exec(path);
      if (method === 'POST' && beat) {
        const node = nodes.get(beat[1]!);
        if (!node) return json(res, 404, nodeError(404, 'node not found'));
        node.last_heartbeat = new Date().toISOString();
        return json(res, 200, { message: 'heartbeat received' });
      }
      return json(res, 404, { message: 'Not Found' });
    }

    // Admin routes: an admin's key, else LocalAI's 401.
    if (!admin) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      return json(res, 401, { error: { code: 401, message: 'An authentication key is required', type: 'invalid_request_error' } });
    }
    if (method === 'GET' && path === '/backends/galleries') {
      return galleriesStatus === null ? json(res, 200, options.galleries) : json(res, galleriesStatus, { error: { code: galleriesStatus, message: 'upstream unavailable', type: 'server_error' } });
    }
    if (method === 'GET' && path === '/api/nodes') return json(res, 200, [...nodes.values()].sort((a, b) => a.name.localeCompare(b.name)).map(withExtras));
    const one = /^\/api\/nodes\/([^/]+)(?:\/(approve|drain|resume))?$/.exec(path);
    const node = one && nodes.get(one[1]!);
    if (one && !node) return json(res, 404, nodeError(404, 'node not found'));
    if (node && method === 'GET' && !one![2]) return json(res, 200, withExtras(node));
    if (node && method === 'POST' && one![2]) {
      node.status = one![2] === 'drain' ? 'draining' : 'healthy';
      return json(res, 200, { message: `node ${one![2]}d` });
    }
    return json(res, 404, { message: 'Not Found' });
  };

  const register = (req: Record<string, unknown>, res: ServerResponse) => {
    if (req.token !== options.registrationToken) return json(res, 401, nodeError(401, 'invalid registration token'));
    const name = typeof req.name === 'string' ? req.name : '';
    if (!name) return json(res, 400, nodeError(400, 'name is required'));
    const nodeType = typeof req.node_type === 'string' && req.node_type ? req.node_type : 'backend';
    if (nodeType === 'backend' && !req.address) return json(res, 400, nodeError(400, 'address is required for backend workers'));
    const existing = [...nodes.values()].find((n) => n.name === name);
    const now = new Date().toISOString();
    const approved = options.autoApprove !== false && !options.pending?.includes(name);
    const status = approved || (existing && existing.status !== 'pending') ? 'healthy' : 'pending';
    const number = (key: string) => (typeof req[key] === 'number' ? (req[key] as number) : 0);
    const text = (key: string) => (typeof req[key] === 'string' ? (req[key] as string) : '');
    const node: Node = {
      id: existing?.id ?? randomUUID(),
      name,
      node_type: nodeType,
      address: text('address'),
      http_address: text('http_address'),
      status,
      total_vram: number('total_vram'),
      available_vram: number('available_vram'),
      reserved_vram: 0,
      total_ram: number('total_ram'),
      available_ram: number('available_ram'),
      total_disk: number('total_disk'),
      available_disk: number('available_disk'),
      gpu_vendor: text('gpu_vendor'),
      gpu_compute_capability: text('gpu_compute_capability'),
      ...(text('capability') && { capability: text('capability') }),
      max_replicas_per_model: Math.max(1, number('max_replicas_per_model')),
      max_replicas_per_model_manually_set: false,
      vram_budget_manually_set: false,
      last_heartbeat: now,
      created_at: existing?.created_at ?? now,
      updated_at: now,
      labels: { ...existing?.labels, ...(req.labels as Record<string, string> | undefined), ...(text('gpu_vendor') && { 'gpu.vendor': text('gpu_vendor') }) },
    };
    nodes.set(node.id, node);
    return json(res, 201, { id: node.id, name: node.name, node_type: node.node_type, status: node.status, created_at: node.created_at });
  };

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    nodes: () => [...nodes.values()],
    setStatus: (id, status) => {
      const node = nodes.get(id);
      if (node) node.status = status;
    },
    failGalleries: (status) => (galleriesStatus = status),
    requests,
    close: async () => {
      clearInterval(health);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** NodeWithExtras: the node, its loaded-model and in-flight counts, and labels (omitted when none). */
function withExtras(node: Node): object {
  const { labels, ...rest } = node;
  return { ...rest, model_count: 0, in_flight_count: 0, ...(Object.keys(labels).length > 0 && { labels }) };
}

function nodeError(code: number, message: string): object {
  return { error: { code, message, type: 'node_error' } };
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > BODY_MAX) throw new Error('request body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
