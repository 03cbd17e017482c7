// One key-value bucket as its readers reach it, with no JetStream consumer: which keys it holds (its stream's info),
// a key's stored value (a direct get), and every write to it as it happens (a plain subscription to its subjects).
// A consumer may name any deliver subject, so a role allowed to make one could have the server deliver into another
// node's call subject; reading this way needs no such right.
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { BucketName } from '../subjects.ts';

export interface BucketSourceOptions {
  nc: NatsConnection;
  name: BucketName;
  /** The bucket, made (a viewer) or opened (a node); rejects while it cannot be had. */
  open(): Promise<KV>;
}

/** A key's last value or marker as the bucket holds it. */
export interface StoredValue {
  revision: number;
  /** PUT for a value; DEL or PURGE for a marker anyone with a right to the key can write. */
  operation: string;
  value: Uint8Array;
  /** The revision the server checked this value was written over (its writer named it), or null when none was named. */
  expected: number | null;
  /** When the server stored it. */
  created: Date;
}

export class BucketSource {
  private jsm: Promise<JetStreamManager> | null = null;

  constructor(private readonly options: BucketSourceOptions) {}

  get name(): BucketName {
    return this.options.name;
  }

  kv(): Promise<KV> {
    return this.options.open();
  }

  /** The stored keys (as the bucket spells them) that hold a value or a delete marker. */
  async storedKeys(): Promise<string[]> {
    await this.kv();
    const jsm = await this.manager();
    const prefix = this.subjectPrefix();
    const info = await jsm.streams.info(`KV_${this.options.name}`, { subjects_filter: `${prefix}>` });
    return Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
  }

  /** What the bucket holds under `storedKey` now: its last value or marker, or null when it holds none. */
  async get(storedKey: string): Promise<StoredValue | null> {
    await this.kv();
    const jsm = await this.manager();
    const msg = await jsm.direct.getMessage(`KV_${this.options.name}`, { last_by_subj: `${this.subjectPrefix()}${storedKey}` });
    if (!msg) return null;
    const expected = msg.header.get('Nats-Expected-Last-Subject-Sequence');
    return {
      revision: msg.seq,
      operation: msg.header.get('KV-Operation') || 'PUT',
      value: msg.data,
      expected: /^\d{1,16}$/.test(expected) ? Number(expected) : null,
      created: msg.time,
    };
  }

  /** Removes the value stored at `revision` outright (no delete marker); false when it is no longer there. */
  async erase(revision: number): Promise<boolean> {
    const jsm = await this.manager();
    return jsm.streams.deleteMessage(`KV_${this.options.name}`, revision, false).catch(() => false);
  }

  /** Calls `onKey` with the stored key of every write heard (accepted by the bucket or not: read it back to know). */
  listen(onKey: (storedKey: string) => void): Subscription {
    const prefix = this.subjectPrefix();
    return this.options.nc.subscribe(`${prefix}>`, {
      callback: (error, msg) => {
        if (!error && msg.subject.startsWith(prefix)) onKey(msg.subject.slice(prefix.length));
      },
    });
  }

  private subjectPrefix(): string {
    return `$KV.${this.options.name}.`;
  }

  private manager(): Promise<JetStreamManager> {
    this.jsm ??= jetstreamManager(this.options.nc, { checkAPI: false });
    this.jsm.catch(() => (this.jsm = null));
    return this.jsm;
  }
}
