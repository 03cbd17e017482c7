// A viewer's calls to nodes: each signed with this host's key for one node and one reply subject under this user's
// own inbox prefix; the answer is taken only when the node it was sent to signed every part of it.
import { randomBytes } from 'node:crypto';
import { createInbox, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { ClusterHealth } from './health.ts';
import type { ClusterIdentity } from './node-key.ts';
import { decodeBody, MAX_REPLY_BYTES, PartCollector, parsePart } from './payload.ts';
import { RequestFailure } from './request-failure.ts';
import { check, sign } from './signed.ts';
import { callSubject } from './subjects.ts';


interface Pending {
  node: string;
  subject: string;
  collector: PartCollector;
  /** Set once the server said nobody listens: the call fails unless a signed reply comes first. */
  noResponders: NodeJS.Timeout | null;
  resolve(text: string): void;
  reject(error: RequestFailure): void;
}

/** NATS's status for a request nobody subscribes to. */
const NO_RESPONDERS = 503;
/**
 * Anyone who may publish into this host's inbox can send that status too (a node answering another call, say): it
 * is believed once no signed reply came for this long after it.
 */
const NO_RESPONDERS_GRACE_MS = 500;

export class Caller {
  private readonly pending = new Map<string, Pending>();
  private subscription: Subscription | undefined;
  private inbox = '';
  private next = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly identity: ClusterIdentity,
    private readonly inboxPrefix: string,
    private readonly health: ClusterHealth,
  ) {
    // The server reports a refused publish after the fact: calls it refused end now, with its words.
    health.on('violation', (message) => {
      for (const [token, call] of this.pending) {
        if (message.includes(`"${call.subject}"`) || message.includes(`"${this.inbox}.`)) this.settle(token, (c) => c.reject(new RequestFailure('refused', message)));
      }
    });
  }

  /** Sends `data` to node `id`'s call subject and resolves with the text of its reply. */
  request(id: string, data: string, timeoutMs: number): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const token = String(this.next++);
      const subject = callSubject(id);
      const timer = setTimeout(() => this.settle(token, (c) => c.reject(new RequestFailure('timeout', 'timeout'))), timeoutMs);
      const pending: Pending = {
        node: id,
        subject,
        collector: new PartCollector(),
        noResponders: null,
        resolve: (text) => (clearTimeout(timer), clearTimeout(pending.noResponders ?? undefined), resolve(text)),
        reject: (error) => (clearTimeout(timer), clearTimeout(pending.noResponders ?? undefined), reject(error)),
      };
      this.pending.set(token, pending);
      try {
        const reply = `${this.listen()}.${token}`;
        const body = Buffer.from(data);
        const stamp = { at: String(Date.now()), nonce: randomBytes(18).toString('base64url') };
        this.nc.publish(subject, body, { reply, headers: sign(this.identity, 'call', subject, id, reply, stamp, body) });
      } catch (error) {
        this.settle(token, (c) => c.reject(new RequestFailure('other', (error as Error).message)));
      }
    });
  }

  close(): void {
    this.subscription?.unsubscribe();
    for (const token of [...this.pending.keys()]) this.settle(token, (c) => c.reject(new RequestFailure('other', 'the cluster link closed')));
  }

  /** One subscription under this user's inbox prefix carries every reply; made again if the server dropped it. */
  private listen(): string {
    if (this.subscription && !this.subscription.isClosed()) return this.inbox;
    this.inbox = createInbox(this.inboxPrefix);
    this.subscription = this.nc.subscribe(`${this.inbox}.*`, { callback: this.health.guard('replies', (msg) => this.hear(msg)) });
    return this.inbox;
  }

  private async hear(msg: Msg): Promise<void> {
    const token = msg.subject.slice(this.inbox.length + 1);
    const call = this.pending.get(token);
    if (!call) return;
    if (msg.headers?.code === NO_RESPONDERS) {
      call.noResponders ??= setTimeout(() => this.settle(token, (c) => c.reject(new RequestFailure('no-responders', 'no responders'))), NO_RESPONDERS_GRACE_MS);
      return;
    }
    const drop = (reason: string) => this.health.drop('replies', reason, call.subject);
    const checked = check(msg, 'reply', call.node, this.identity.cluster ?? '');
    if (!checked.ok) return drop(checked.reason);
    // A reply signed by any key but the node's own is another client answering in its name.
    if (checked.key.id !== call.node) return drop("signed by another node's key");
    const part = parsePart(checked.stamp.part);
    if (!part) return drop('bad part');
    const parts = call.collector.add(part, msg.data, checked.stamp.encoding);
    if (parts === 'conflict') return drop('parts disagree');
    if (parts === 'too large') {
      drop('too large');
      return this.settle(token, (c) => c.reject(new RequestFailure('other', `its reply is larger than ${MAX_REPLY_BYTES / 1024 / 1024} MiB`)));
    }
    if (!parts) return;
    this.pending.delete(token);
    try {
      call.resolve(await decodeBody(parts, call.collector.encoding, MAX_REPLY_BYTES));
    } catch (error) {
      call.reject(new RequestFailure('other', `its reply could not be read: ${(error as Error).message.split('\n')[0]}`));
    }
  }

  private settle(token: string, finish: (call: Pending) => void): void {
    const call = this.pending.get(token);
    if (!call) return;
    this.pending.delete(token);
    finish(call);
  }
}
