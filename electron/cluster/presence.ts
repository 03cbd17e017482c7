import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { EventEmitter } from 'node:events';
import type { NodeCard } from '../../shared/types.ts';
import { heartbeatSchema, MISSED_HEARTBEATS, type Heartbeat } from './heartbeat.ts';
import { PRESENCE_ALL, PRESENCE_QUERY } from './subjects.ts';

interface Seen {
  heartbeat: Heartbeat;
  at: number;
  offline: string | null;
}

/**
 * A viewer's table of the cluster's members, kept from their heartbeats. A member goes offline when
 * MISSED_HEARTBEATS of its own heartbeats in a row are missing, and comes back with the next one.
 */
export class Presence extends EventEmitter<{ member: [NodeCard] }> {
  private readonly seen = new Map<string, Seen>();
  private subscription: Subscription | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly selfId: string,
    checkMs: number,
  ) {
    super();
    this.timer = setInterval(() => this.expire(), checkMs);
  }

  start(): void {
    this.subscription = this.nc.subscribe(PRESENCE_ALL, {
      callback: (error, msg) => {
        if (error) return;
        let parsed;
        try {
          parsed = heartbeatSchema.safeParse(JSON.parse(msg.string()));
        } catch {
          return;
        }
        if (parsed.success && msg.subject.endsWith(`.${parsed.data.id}`)) this.record(parsed.data);
      },
    });
    this.nc.publish(PRESENCE_QUERY);
  }

  cards(): NodeCard[] {
    return [...this.seen.values()].map((s) => this.card(s)).sort(byName);
  }

  card(idOrSeen: string | Seen): NodeCard {
    const seen = typeof idOrSeen === 'string' ? this.seen.get(idOrSeen) : idOrSeen;
    if (!seen) throw new Error(`no member ${String(idOrSeen)}`);
    const { leaving: _leaving, ...heartbeat } = seen.heartbeat;
    return {
      ...heartbeat,
      self: heartbeat.id === this.selfId,
      status: seen.offline === null ? 'online' : 'offline',
      reason: seen.offline,
      lastSeen: new Date(seen.at).toISOString(),
    };
  }

  has(id: string): boolean {
    return this.seen.has(id);
  }

  close(): void {
    clearInterval(this.timer);
    this.subscription?.unsubscribe();
  }

  private record(heartbeat: Heartbeat): void {
    const before = this.seen.get(heartbeat.id);
    const seen: Seen = { heartbeat, at: Date.now(), offline: heartbeat.leaving ? 'it shut down' : null };
    this.seen.set(heartbeat.id, seen);
    const changed = !before || before.offline !== seen.offline || JSON.stringify(before.heartbeat) !== JSON.stringify(heartbeat);
    if (changed) this.emit('member', this.card(seen));
  }

  private expire(): void {
    const now = Date.now();
    for (const seen of this.seen.values()) {
      const silentMs = now - seen.at;
      if (seen.offline !== null || silentMs < MISSED_HEARTBEATS * seen.heartbeat.heartbeatMs) continue;
      seen.offline = `no heartbeat for ${(silentMs / 1000).toFixed(1)} s`;
      this.emit('member', this.card(seen));
    }
  }
}

function byName(a: NodeCard, b: NodeCard): number {
  return a.name.localeCompare(b.name) || a.id.localeCompare(b.id);
}
