// Everything a node sends to the cluster goes through here: signed with its key, compressed when large, split into
// parts when a reply is larger than the server's max_payload, and never thrown out of a handler. What cannot be sent
// is counted and said, and a caller gets an error reply instead of silence.
import type { NatsConnection, PublishOptions } from '@nats-io/transport-node';
import { iecBytes } from '../../shared/progress.ts';
import type { Envelope } from '../core/invoke.ts';
import type { ClusterHealth } from './health.ts';
import type { ClusterIdentity } from './node-key.ts';
import { encodeBody, MAX_PARTS } from './payload.ts';
import { Sequence, sign } from './signed.ts';

/** NATS's default, used until the server's INFO says otherwise. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

export class NodeSender {
  private readonly sequence = new Sequence();
  /** Cards and events leave in the order they were made, compressed or not. */
  private queue = Promise.resolve();

  constructor(
    private readonly nc: NatsConnection,
    private readonly identity: ClusterIdentity,
    private readonly health: ClusterHealth,
  ) {}

  maxPayload(): number {
    const announced = this.nc.info?.max_payload;
    return typeof announced === 'number' && announced > 0 ? announced : DEFAULT_MAX_PAYLOAD;
  }

  /** A card or an event, as one signed message: the sequence it was stamped with, or null when it could not go. */
  announce(subject: string, kind: 'card' | 'event', text: string): Promise<string | null> {
    return this.inOrder(async () => {
      const encoded = await encodeBody(text, this.maxPayload(), 1);
      if (!encoded) {
        this.health.unsend(`${kind} too large`);
        return null;
      }
      const [body] = encoded.parts as [Buffer];
      const stamp = { at: this.sequence.next(), ...(encoded.encoding && { encoding: encoded.encoding }) };
      return this.publish(subject, body, { headers: sign(this.identity, kind, subject, this.identity.id, '', stamp, body) }) ? stamp.at : null;
    });
  }

  /** A beat between cards: the node is there and stands by its card stamped `cardAt`. Its own sequence is its body's. */
  beat(subject: string, cardAt: string): Promise<string | null> {
    return this.inOrder(async () => {
      const at = this.sequence.next();
      const body = Buffer.from(`${at} ${cardAt}`);
      return this.publish(subject, body, { headers: sign(this.identity, 'beat', subject, this.identity.id, '', {}, body) }) ? at : null;
    });
  }

  private inOrder(send: () => Promise<string | null>): Promise<string | null> {
    const sent = this.queue.then(send);
    this.queue = sent.then(() => undefined, () => undefined);
    return sent.catch(() => null);
  }

  /** Answers a call on its reply subject: the whole envelope, in as many parts as it takes, or an error that fits. */
  async reply(to: string, envelope: Envelope): Promise<void> {
    const maxPayload = this.maxPayload();
    const text = JSON.stringify(envelope);
    let encoded = await encodeBody(text, maxPayload);
    if (!encoded) {
      this.health.unsend('reply too large');
      const message = `the reply is ${iecBytes(text.length)}: more than ${MAX_PARTS} messages of this cluster's max_payload (${iecBytes(maxPayload)}) can carry`;
      encoded = (await encodeBody(JSON.stringify({ ok: false, error: { code: 'failed', message } }), maxPayload))!;
    }
    const count = encoded.parts.length;
    for (const [index, body] of encoded.parts.entries()) {
      const stamp = { part: `${index}/${count}`, ...(encoded.encoding && { encoding: encoded.encoding }) };
      if (!this.publish(to, body, { headers: sign(this.identity, 'reply', to, this.identity.id, '', stamp, body) })) return;
    }
  }

  private publish(subject: string, body: Uint8Array, options: PublishOptions): boolean {
    // While the link is down the client buffers; a closed connection means the host is shutting down.
    if (this.nc.isClosed()) return false;
    try {
      this.nc.publish(subject, body, options);
      return true;
    } catch (error) {
      this.health.unsend(`publish failed: ${(error as Error).message.split('\n')[0]!.slice(0, 120)}`);
      return false;
    }
  }
}
