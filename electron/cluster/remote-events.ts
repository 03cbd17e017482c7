// The other nodes' events as a viewer takes them: from a member it has the card of, on the node's own events subject,
// signed by the key its id derives from, newer than the last taken, inflated only up to a limit (and compressed ones
// only at a rate), and valid by the contract's event schema. Anything else is dropped and counted, so a forged or
// malformed event never reaches a listener (the UI, a waiting CLI), and one from a stranger is dropped before any work.
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { nodeEventSchema, type NodeOwnEvent } from '../../shared/event-schema.ts';
import type { ClusterHealth } from './health.ts';
import { decodeBody, MAX_EVENT_BYTES } from './payload.ts';
import { check, isCompressed } from './signed.ts';
import { EVENTS_ALL, subjectNode } from './subjects.ts';

const INFLATES_PER_S = 10;
const INFLATE_BURST = 50;

export class RemoteEvents {
  /** The last sequence taken from each node that has a card. */
  private readonly sequences = new Map<string, number>();
  /** Compressed events each node may still send now (a token bucket per node). */
  private readonly inflates = new Map<string, { tokens: number; at: number }>();
  private subscription: Subscription | undefined;
  /** Events are handled one after another, so a compressed one does not overtake the next. */
  private queue = Promise.resolve();

  constructor(
    private readonly nc: NatsConnection,
    /** This host's own node, whose events reach it without the cluster. */
    private readonly selfId: string | null,
    private readonly members: { listensTo(id: string): boolean; on(event: 'removed', listener: (id: string) => void): unknown },
    private readonly health: ClusterHealth,
    private readonly emit: (event: NodeOwnEvent) => void,
    /** The cluster the events are signed for. */
    private readonly cluster: string,
  ) {
    members.on('removed', (id) => {
      this.sequences.delete(id);
      this.inflates.delete(id);
    });
  }

  start(): void {
    if (this.subscription) return;
    this.subscription = this.nc.subscribe(EVENTS_ALL, {
      callback: this.health.guard('events', (msg) => {
        const id = subjectNode(msg.subject);
        if (id === this.selfId) return;
        // Decided as it arrives, so what is dropped is never queued.
        if (!this.members.listensTo(id)) return this.health.drop('events', 'from a node this host does not call', msg.subject);
        if (isCompressed(msg) && !this.mayInflate(id)) return this.health.drop('events', 'compressed, over its rate', msg.subject);
        const handled = this.queue.then(() => this.hear(msg));
        this.queue = handled.catch(() => undefined);
        return handled;
      }),
    });
  }

  close(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
  }

  /** A node sends few compressed events (a gallery's entries when it changes): so many a second, in bursts of so many. */
  private mayInflate(id: string): boolean {
    const now = Date.now();
    const bucket = this.inflates.get(id) ?? { tokens: INFLATE_BURST, at: now };
    bucket.tokens = Math.min(INFLATE_BURST, bucket.tokens + ((now - bucket.at) / 1000) * INFLATES_PER_S);
    bucket.at = now;
    this.inflates.set(id, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens--;
    return true;
  }

  private async hear(msg: Msg): Promise<void> {
    const drop = (reason: string) => this.health.drop('events', reason, msg.subject);
    const id = subjectNode(msg.subject);
    const checked = check(msg, 'event', id, this.cluster);
    if (!checked.ok) return drop(checked.reason);
    if (checked.key.id !== id) return drop("signed by another node's key");
    let value: unknown;
    try {
      value = JSON.parse(await decodeBody([msg.data], checked.stamp.encoding, MAX_EVENT_BYTES));
    } catch {
      return drop('not JSON');
    }
    const parsed = nodeEventSchema.safeParse(value);
    if (!parsed.success) return drop('not an event');
    if (parsed.data.node !== id) return drop('names another node');
    const sequence = Number(checked.stamp.at);
    if (!Number.isSafeInteger(sequence) || sequence <= (this.sequences.get(id) ?? 0)) return drop('replayed');
    this.sequences.set(id, sequence);
    this.emit(parsed.data);
  }
}
