// A hostile LocalAI at the linked address (tests only): a real HTTP server in front of a real (stand-in) LocalAI that
// passes every request through, except those it is told to spoil: headers then a byte a second, no answer at all, or
// a body of its choosing (a listing of 100,000 models).
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Spoil = { kind: 'drip' } | { kind: 'hang' } | { kind: 'body'; body: string; status?: number };

export class HostileLocalAi {
  private server: Server | null = null;
  private port = 0;
  private readonly spoils = new Map<string, { spoil: Spoil; times: number }>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** How many requests to each path were spoiled. */
  readonly spoiled = new Map<string, number>();

  constructor(private readonly target: string) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Spoils the next `times` requests to `path` (no query). */
  spoil(path: string, spoil: Spoil, times = Number.POSITIVE_INFINITY): void {
    this.spoils.set(path, { spoil, times });
  }

  mend(path: string): void {
    this.spoils.delete(path);
  }

  async start(): Promise<void> {
    const server = (this.server = createServer((req, res) => this.answer(req, res)));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    this.port = (server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    const server = this.server;
    this.server = null;
    server?.closeAllConnections();
    if (server) await new Promise((done) => server.close(done));
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const planned = this.spoils.get(path);
    if (!planned || planned.times <= 0) return this.pass(req, res);
    planned.times--;
    this.spoiled.set(path, (this.spoiled.get(path) ?? 0) + 1);
    const { spoil } = planned;
    if (spoil.kind === 'hang') return;
    if (spoil.kind === 'body') {
      res.writeHead(spoil.status ?? 200, { 'content-type': 'application/json' });
      res.end(spoil.body);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{');
    const timer = setInterval(() => res.write(' '), 1000);
    this.timers.add(timer);
    res.on('close', () => {
      clearInterval(timer);
      this.timers.delete(timer);
    });
  }

  private pass(req: IncomingMessage, res: ServerResponse): void {
    const target = new URL(this.target);
    const upstream = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  }
}
