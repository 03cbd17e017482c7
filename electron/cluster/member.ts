import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { hostname } from 'node:os';
import { LOCAL_NODE, nodeMethods, type NodeApi } from '../../shared/api.ts';
import type { NodeEvent } from '../../shared/types.ts';
import { invokeNode, type Envelope } from '../core/invoke.ts';
import { countsOf, type Heartbeat } from './heartbeat.ts';
import { callSubject, eventsSubject, presenceSubject, PRESENCE_QUERY } from './subjects.ts';

export type EventSource = NodeApi & {
  on(event: 'event', listener: (e: NodeEvent) => void): unknown;
  off(event: 'event', listener: (e: NodeEvent) => void): unknown;
};

export interface MemberOptions {
  nc: NatsConnection;
  /** This machine's node, which knows itself as `local`. */
  node: EventSource;
  id: string;
  name: string;
  heartbeatMs: number;
}

const COUNTED_EVENTS: ReadonlySet<NodeEvent['type']> = new Set(['backend', 'backend-removed', 'process', 'process-removed']);
const COUNT_DEBOUNCE_MS = 100;

/** No request comes near this; a bigger one is refused before it is parsed. */
export const MAX_REQUEST_BYTES = 256 * 1024;

/**
 * This machine as a cluster member: answers calls on its own subject through the same validating invoker as every
 * other transport, publishes its events, and sends a heartbeat that carries its card.
 */
export class Member {
  private readonly subscriptions: Subscription[] = [];
  private timer: NodeJS.Timeout | undefined;
  private heartbeat: Heartbeat | undefined;
  private counting = false;
  private countsTimer: NodeJS.Timeout | undefined;
  private readonly onEvent = (event: NodeEvent) => {
    this.publish(eventsSubject(this.options.id), this.relabel(event));
    if (COUNTED_EVENTS.has(event.type)) this.countSoon();
  };

  constructor(private readonly options: MemberOptions) {}

  get id(): string {
    return this.options.id;
  }

  async start(): Promise<void> {
    const { nc, node, id, name, heartbeatMs } = this.options;
    const info = await node.info({ node: LOCAL_NODE });
    const counts = countsOf(await node.backends({ node: LOCAL_NODE }));
    this.heartbeat = { id, name, host: hostname(), platform: info.platform, arch: info.arch, capability: info.capability, version: info.version, counts, heartbeatMs };
    this.subscriptions.push(
      nc.subscribe(callSubject(id), {
        callback: (error, msg) => {
          if (!error) void this.answer(msg);
        },
      }),
      nc.subscribe(PRESENCE_QUERY, { callback: () => this.beat() }),
    );
    node.on('event', this.onEvent);
    this.timer = setInterval(() => this.beat(), heartbeatMs);
    this.beat();
  }

  /** Answers one call meant for this node; the host uses it too when a viewer names this node by its id. */
  async serve(method: unknown, params: unknown): Promise<Envelope> {
    const named = typeof params === 'object' && params !== null ? (params as { node?: unknown }).node : undefined;
    if (named !== this.options.id) {
      return { ok: false, error: { code: 'forbidden', message: `this is node ${this.options.id}; the call names ${describe(named)}` } };
    }
    const envelope = await invokeNode(this.options.node, method, { ...(params as object), node: LOCAL_NODE }, nodeMethods);
    if (!envelope.ok) return envelope;
    const value = this.relabel(envelope.value);
    if (method === 'info') Object.assign(value as object, { id: this.options.id });
    return { ok: true, value };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    clearTimeout(this.countsTimer);
    this.options.node.off('event', this.onEvent);
    if (this.heartbeat && !this.options.nc.isClosed()) this.publish(presenceSubject(this.options.id), { ...this.heartbeat, leaving: true });
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    await this.options.nc.flush().catch(() => undefined);
  }

  private async answer(msg: Msg): Promise<void> {
    let envelope: Envelope;
    if (msg.data.length > MAX_REQUEST_BYTES) {
      envelope = { ok: false, error: { code: 'invalid-request', message: 'the request is too large' } };
    } else {
      let request: unknown;
      try {
        request = JSON.parse(msg.string());
      } catch {
        request = undefined;
      }
      envelope = typeof request === 'object' && request !== null && !Array.isArray(request)
        ? await this.serve((request as { method?: unknown }).method, (request as { params?: unknown }).params)
        : { ok: false, error: { code: 'invalid-request', message: 'the request is not a JSON object' } };
    }
    if (msg.reply) msg.respond(JSON.stringify(envelope));
  }

  /** Sends the heartbeat with the counts known now, then refreshes them for the next one. */
  private beat(): void {
    if (!this.heartbeat) return;
    this.publish(presenceSubject(this.options.id), this.heartbeat);
    void this.count();
  }

  /** A backend or process changed: the card's counts (stale above all) reach viewers now, not a heartbeat later. */
  private countSoon(): void {
    clearTimeout(this.countsTimer);
    this.countsTimer = setTimeout(() => {
      void this.count().then((changed) => changed && this.heartbeat && this.publish(presenceSubject(this.options.id), this.heartbeat));
    }, COUNT_DEBOUNCE_MS);
  }

  /** Refreshes the counts; true when they changed. */
  private async count(): Promise<boolean> {
    if (this.counting || !this.heartbeat) return false;
    this.counting = true;
    try {
      const counts = countsOf(await this.options.node.backends({ node: LOCAL_NODE }));
      if (!this.heartbeat || JSON.stringify(counts) === JSON.stringify(this.heartbeat.counts)) return false;
      this.heartbeat = { ...this.heartbeat, counts };
      return true;
    } catch {
      return false;
    } finally {
      this.counting = false;
    }
  }

  private publish(subject: string, value: unknown): void {
    // While the link is down the client buffers; a closed connection only means this node is shutting down.
    if (!this.options.nc.isClosed()) this.options.nc.publish(subject, JSON.stringify(value));
  }

  /** The node calls itself `local`; the cluster knows it by its id. */
  private relabel<T>(value: T): T {
    return relabelNode(value, this.options.id);
  }
}

export function relabelNode<T>(value: T, id: string): T {
  if (Array.isArray(value)) return value.map((v: unknown) => relabelNode(v, id)) as T;
  if (typeof value !== 'object' || value === null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) copy[key] = key === 'node' && v === LOCAL_NODE ? id : relabelNode(v, id);
  return copy as T;
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 64)) : 'no node';
}
