// Records in a JetStream key-value bucket on the cluster's nats-server: every value signed by its writer for this
// cluster (sealed.ts), read back key by key (bucket-source.ts) and checked (signature, cluster, kind, key, schema, who
// may write it, and that it was written right over the revision it names, at or past the last one taken) before it is
// taken. What fails is counted and never shown or acted on. A value signed by a key this host does not trust is
// listed as such, never taken; and a bad or untrusted value, or a bare delete or purge marker, written over a good
// one does not erase it here: the good one stays until a value this host takes replaces it, or a signed removal.
// Every write names the revision it replaces and the server refuses it if the key moved on: the store's order, not a
// clock, says which value is newer.
import type { Subscription } from '@nats-io/transport-node';
import { setTimeout as sleep } from 'node:timers/promises';
import type * as z from 'zod';
import { HangarError } from '../../../shared/errors.ts';
import type { ClusterHealth } from '../health.ts';
import type { ClusterIdentity, PublicKey } from '../node-key.ts';
import type { BucketSource, StoredValue } from './bucket-source.ts';
import { RecordConflict, RecordMap, type Records, type UntrustedRecord } from './records.ts';
import { seal, unseal, type RecordKind } from './sealed.ts';
import type { SeenMarks } from './seen-marks.ts';

/** JetStream's "wrong last sequence": a conditional write lost. */
const WRONG_LAST_SEQUENCE = [10071, 10164];
const RETRY_MS = [250, 500, 1000, 2000, 5000];
/** Readers do not wait longer than this for the first read before they answer with what they have. */
const READY_WAIT_MS = 3000;
/** Keys read back at once when a whole bucket is read. */
const READS_AT_ONCE = 8;
/** Untrusted values listed per bucket; past this they are only counted. */
const UNTRUSTED_LISTED = 256;
/** An untrusted value is kept beside its listing only up to this size (a desired version is well under it). */
const UNTRUSTED_VALUE_MAX_BYTES = 4096;
/** A write at a key's head that finds it moved on reads it again and tries again, this many times in all. */
const PUT_TRIES = 3;

/** How a record's key is spelled in the bucket. */
export interface KeyCodec {
  toStored(key: string): string;
  /** Null for a stored key that names no record of this kind. */
  fromStored(stored: string): string | null;
}

export interface KvRecordsOptions<T> {
  kind: RecordKind;
  schema: z.ZodType<T>;
  identity: ClusterIdentity;
  /** The cluster this host is in, signed into every record it writes and checked in every record it reads. */
  cluster: string;
  health: ClusterHealth;
  source: BucketSource;
  /** Whether this host takes values signed by `signer`: its own key, and the keys it trusts. */
  trusts(signer: PublicKey): Promise<boolean>;
  /** Whether `signer` may have written this value (null: removed the record) under `key` at all (a node's status only under its own id). */
  accept?(key: string, signer: PublicKey, value: T | null): boolean;
  marks: SeenMarks;
  keys?: KeyCodec;
  /** Says whether the bucket can be read, and why not. */
  onAvailability(available: boolean, reason: string | null): void;
}

/** Logical keys (backend names hold "+" and "."), as the bucket's keys allow: `[-/=\w]` with "=XX" escapes. */
export const storageKey = (key: string) => key.replace(/[^-/\w]/g, (c) => `=${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
export const logicalKey = (stored: string) => stored.replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
export const PLAIN_KEYS: KeyCodec = { toStored: storageKey, fromStored: (stored) => (stored.includes('.') ? null : logicalKey(stored)) };

export class KvRecords<T> extends RecordMap<T> implements Records<T> {
  private closed = false;
  private subscription: Subscription | null = null;
  private readonly firstRead: Promise<void>;
  private readDone!: () => void;
  /** The revision the bucket holds under each key now, whatever it holds. */
  private readonly heads = new Map<string, number>();
  private readonly untrustedByKey = new Map<string, UntrustedRecord<T>>();
  /** Keys being read back, and those written to again meanwhile. */
  private readonly reading = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private rereading: Promise<void> | null = null;

  constructor(private readonly options: KvRecordsOptions<T>) {
    super();
    this.firstRead = new Promise((resolve) => (this.readDone = resolve));
  }

  private get keys(): KeyCodec {
    return this.options.keys ?? PLAIN_KEYS;
  }

  start(): void {
    this.subscription = this.options.source.listen((stored) => {
      const key = this.keys.fromStored(stored);
      // A write heard but not read back (the store out of reach a moment) is found by reading the bucket again.
      if (key !== null) this.refresh(key).catch(() => this.reread());
    });
    void this.reread();
  }

  close(): void {
    this.closed = true;
    this.subscription?.unsubscribe();
  }

  ready(): Promise<void> {
    return Promise.race([this.firstRead, sleep(READY_WAIT_MS)]);
  }

  untrusted(): UntrustedRecord<T>[] {
    return [...this.untrustedByKey.values()];
  }

  /**
   * Reads every key again (after the link came back, or when the trust list changed), until one read succeeds; the
   * listings of untrusted keys the bucket no longer holds are dropped.
   */
  reread(): Promise<void> {
    this.rereading ??= this.readAll().finally(() => (this.rereading = null));
    return this.rereading;
  }

  /** Writes a key that holds no record this host takes (whatever untrusted value or marker it holds is written over). */
  async create(key: string, value: T): Promise<number> {
    for (let tries = 1; ; tries++) {
      if (this.get(key)) throw new RecordConflict();
      try {
        return await this.write(key, value, this.heads.get(key) ?? 0);
      } catch (error) {
        if (!(error instanceof RecordConflict) || tries >= PUT_TRIES) throw error;
        await this.refresh(key);
      }
    }
  }

  /** Writes over the revision named, or over whatever untrusted value or marker was written after it. */
  async update(key: string, value: T, revision: number): Promise<number> {
    const over = () => {
      const head = this.heads.get(key) ?? revision;
      return this.get(key)?.revision === revision && head > revision ? head : revision;
    };
    try {
      return await this.write(key, value, over());
    } catch (error) {
      if (!(error instanceof RecordConflict)) throw error;
      // Perhaps only an untrusted value came in between, not yet heard: read it, and write over it once.
      await this.refresh(key);
      if (this.get(key)?.revision !== revision) throw error;
      return this.write(key, value, over());
    }
  }

  /** Writes over whatever the key holds now, read again when another write came first. */
  async put(key: string, value: T): Promise<number> {
    return this.atHead(key, (head) => this.write(key, value, head));
  }

  /** A signed removal: readers that trust this host drop the record, and nothing older can come back over it. */
  async remove(key: string): Promise<void> {
    await this.atHead(key, (head) => this.write(key, undefined, head));
  }

  /** The store says where the key is when a write finds it moved on (a node may not read its own status back). */
  private async atHead(key: string, write: (head: number) => Promise<number>): Promise<number> {
    for (let tries = 1; ; tries++) {
      try {
        return await write(this.heads.get(key) ?? 0);
      } catch (error) {
        if (!(error instanceof RecordConflict) || tries >= PUT_TRIES) throw error;
        if (error.head !== null) this.noteHead(key, error.head);
        else await this.refresh(key);
      }
    }
  }

  /** Writes `value` (undefined: the record's removal) over revision `after`, which the server checks is the key's last. */
  private async write(key: string, value: T | undefined, after: number): Promise<number> {
    const kv = await this.bucket();
    const at = Date.now();
    const data = seal(this.options.identity, this.options.kind, key, { cluster: this.options.cluster, after }, value, at);
    let revision: number;
    try {
      revision = await kv.put(this.keys.toStored(key), data, { previousSeq: after });
    } catch (error) {
      throw storeError(error);
    }
    // Readers of this host see what it wrote at once; reading it back brings the same revision again.
    this.options.marks.raise(this.options.source.name, key, revision);
    this.noteHead(key, revision);
    if (value === undefined) this.drop(key);
    else this.take({ key, value, revision, signer: this.options.identity.publicKey, by: this.options.identity.id, at });
    return revision;
  }

  private async bucket() {
    return this.options.source.kv().catch((error: unknown) => {
      throw storeError(error);
    });
  }

  private async readAll(): Promise<void> {
    await this.options.marks.ready();
    for (let attempt = 0; !this.closed; attempt++) {
      try {
        const keys = new Set((await this.options.source.storedKeys()).flatMap((stored) => this.keys.fromStored(stored) ?? []));
        // A few at a time: a bucket filled with large values is never all in memory at once.
        const queue = [...keys];
        await Promise.all(Array.from({ length: READS_AT_ONCE }, async () => {
          for (let key = queue.shift(); key !== undefined; key = queue.shift()) await this.refresh(key);
        }));
        // A key gone from the bucket was erased outside Hangar (no writer of it removes a record that way): what was
        // taken stays; only a listing of what was never taken goes.
        for (const known of [...this.untrustedByKey.keys()]) if (!keys.has(known)) this.unlist(known);
        this.options.onAvailability(true, null);
        this.readDone();
        return;
      } catch (error) {
        this.options.onAvailability(false, storeError(error).message);
        this.readDone();
      }
      await sleep(RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]);
    }
  }

  /** Reads a key back from the bucket; one read at a time per key, and one more if it was written to meanwhile. */
  private refresh(key: string): Promise<void> {
    const running = this.reading.get(key);
    if (running) {
      this.again.add(key);
      return running;
    }
    const read = (async () => {
      do {
        this.again.delete(key);
        const entry = await this.options.source.get(this.keys.toStored(key));
        if (entry) await this.hear(key, entry);
      } while (this.again.has(key) && !this.closed);
    })().finally(() => this.reading.delete(key));
    this.reading.set(key, read);
    return read;
  }

  private async hear(key: string, stored: StoredValue): Promise<void> {
    await this.options.marks.ready();
    if ((this.heads.get(key) ?? 0) > stored.revision) return;
    this.noteHead(key, stored.revision);
    const bucket = this.options.source.name;
    const drop = (reason: string) => this.options.health.drop('records', reason, `${bucket}.${this.keys.toStored(key)}`);
    if (stored.operation !== 'PUT') return drop(`a ${stored.operation} marker, signed by no one (the record stays)`);
    const opened = unseal(stored.value, this.options.kind, key, this.options.cluster);
    if (!opened.ok) return drop(opened.reason);
    const parsed = opened.removed ? null : this.options.schema.safeParse(opened.body);
    if (parsed && !parsed.success) return drop(`not a ${this.options.kind} record`);
    const value = parsed ? parsed.data! : null;
    if (this.options.accept && !this.options.accept(key, opened.signer, value)) return drop('signed by a key that may not write it');
    // The server checked the revision its writer named; a copy or a replay is stored over another one.
    if (stored.expected !== opened.after) return drop('not written over the revision it names (a copy or a replay)');
    const mark = this.options.marks.get(bucket, key);
    if (opened.after < mark && stored.revision !== mark) return drop('older than one taken before');
    if (!(await this.options.trusts(opened.signer))) {
      this.listUntrusted({ key, by: opened.signer.id, at: opened.at, value: stored.value.length <= UNTRUSTED_VALUE_MAX_BYTES ? value : null });
      return drop('signed by a key this host does not trust');
    }
    this.unlist(key);
    this.options.marks.raise(bucket, key, stored.revision);
    if (value === null) this.drop(key);
    else this.take({ key, value, revision: stored.revision, signer: opened.signer.text, by: opened.signer.id, at: opened.at });
  }

  private noteHead(key: string, revision: number): void {
    if ((this.heads.get(key) ?? 0) < revision) this.heads.set(key, revision);
  }

  private listUntrusted(record: UntrustedRecord<T>): void {
    if (!this.untrustedByKey.has(record.key) && this.untrustedByKey.size >= UNTRUSTED_LISTED) return;
    this.untrustedByKey.set(record.key, record);
    this.emit('untrusted', record.key);
  }

  private unlist(key: string): void {
    if (this.untrustedByKey.delete(key)) this.emit('untrusted', key);
  }
}

/** What went wrong with the store, in words; a lost conditional write is a RecordConflict. */
export function storeError(error: unknown): HangarError {
  if (error instanceof HangarError) return error;
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
  const head = /wrong last sequence: (\d{1,16})/i.exec(message);
  if (head) return new RecordConflict(undefined, Number(head[1]));
  if (typeof code === 'number' && WRONG_LAST_SEQUENCE.includes(code)) return new RecordConflict();
  if (/wrong last sequence/i.test(message)) return new RecordConflict();
  if (/jetstream is not enabled/i.test(message)) {
    return new HangarError('failed', "the cluster's NATS server keeps no state: start it with JetStream (nats-server -js -sd DIR)");
  }
  if (/stream not found/i.test(message)) return new HangarError('failed', "the cluster's store is not made yet: a viewer makes it when it joins");
  if (/timeout/i.test(message)) return new HangarError('failed', "the cluster's store did not answer (is the NATS server reachable?)");
  if (/permissions violation/i.test(message)) return new HangarError('forbidden', `the NATS server refused this host: ${message}`);
  if (/maximum (bytes|messages) exceeded|message size exceeds/i.test(message)) return new HangarError('failed', `the cluster's store is full or refused the record's size: ${message}`);
  return new HangarError('failed', `the cluster's store: ${message}`);
}
