// The other nodes' events as a viewer takes them: from the node's own events subject, signed by the key its id
// derives from, newer than the last taken, and valid by the contract's event schema. Anything else is dropped and
// counted, so a forged or malformed event never reaches a listener (the UI, a waiting CLI).
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { nodeEventSchema, type NodeOwnEvent } from '../../shared/event-schema.ts';
import { nodeId } from '../../shared/schemas.ts';
import type { ClusterHealth } from './health.ts';
import { decodeBody } from './payload.ts';
import { check, SeenSequences } from './signed.ts';
import { EVENTS_ALL, subjectNode } from './subjects.ts';

export class RemoteEvents {
  private readonly sequences = new SeenSequences();
  private subscription: Subscription | undefined;
  /** Events are handled one after another, so a compressed one does not overtake the next. */
  private queue = Promise.resolve();

  constructor(
    private readonly nc: NatsConnection,
    /** This host's own node, whose events reach it without the cluster. */
    private readonly selfId: string | null,
    private readonly health: ClusterHealth,
    private readonly emit: (event: NodeOwnEvent) => void,
  ) {}

  start(): void {
    this.subscription = this.nc.subscribe(EVENTS_ALL, {
      callback: this.health.guard('events', (msg) => {
        if (subjectNode(msg.subject) === this.selfId) return;
        const handled = this.queue.then(() => this.hear(msg));
        this.queue = handled.catch(() => undefined);
        return handled;
      }),
    });
  }

  close(): void {
    this.subscription?.unsubscribe();
  }

  private async hear(msg: Msg): Promise<void> {
    const drop = (reason: string) => this.health.drop('events', reason, msg.subject);
    const id = subjectNode(msg.subject);
    if (!nodeId.safeParse(id).success) return drop('bad subject');
    const checked = check(msg, 'event', id);
    if (!checked.ok) return drop(checked.reason);
    if (checked.key.id !== id) return drop("signed by another node's key");
    let value: unknown;
    try {
      value = JSON.parse(await decodeBody([msg.data], checked.stamp.encoding));
    } catch {
      return drop('not JSON');
    }
    const parsed = nodeEventSchema.safeParse(value);
    if (!parsed.success) return drop('not an event');
    if (parsed.data.node !== id) return drop('names another node');
    const taken = this.sequences.take(id, checked.stamp.at);
    if (taken !== 'taken') return drop(taken);
    this.emit(parsed.data);
  }
}
