// Records in a JetStream key-value bucket on the cluster's nats-server: every value signed by its writer (sealed.ts),
// read back through one watch that keeps the map current, checked (signature, kind, key, schema) before it is taken.
// A value that fails is dropped and counted, never shown or acted on. The watch is made again whenever it ends.
import type { KV, KvEntry } from '@nats-io/kv';
import { setTimeout as sleep } from 'node:timers/promises';
import type { z } from 'zod';
import { HangarError } from '../../../shared/errors.ts';
import type { ClusterHealth } from '../health.ts';
import type { ClusterIdentity, PublicKey } from '../identity.ts';
import { RecordConflict, RecordMap, type Records } from './records.ts';
import { seal, unseal, type RecordKind } from './sealed.ts';

/** JetStream's "wrong last sequence": a conditional write lost. */
const WRONG_LAST_SEQUENCE = [10071, 10164];
const RETRY_MS = [250, 500, 1000, 2000, 5000];
/** Readers do not wait longer than this for the first read before they answer with what they have. */
const READY_WAIT_MS = 3000;

export interface KvRecordsOptions<T> {
  kind: RecordKind;
  schema: z.ZodType<T>;
  identity: ClusterIdentity;
  health: ClusterHealth;
  /** The bucket, made or opened; rejects while it cannot be had. */
  bucket(): Promise<KV>;
  /** Whether `signer` may have written this value under `key` (a node's status only under its own id). */
  accept?(key: string, signer: PublicKey, value: T): boolean;
  /** Says whether the bucket can be read, and why not. */
  onAvailability(available: boolean, reason: string | null): void;
}

/** Logical keys (backend names hold "+" and "."), as the bucket's keys allow: `[-/=\w]` with "=XX" escapes. */
export const storageKey = (key: string) => key.replace(/[^-/\w]/g, (c) => `=${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
export const logicalKey = (stored: string) => stored.replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

export class KvRecords<T> extends RecordMap<T> implements Records<T> {
  private closed = false;
  private stopWatch: (() => void) | null = null;
  private readonly firstRead: Promise<void>;
  private readDone!: () => void;

  constructor(private readonly options: KvRecordsOptions<T>) {
    super();
    this.firstRead = new Promise((resolve) => (this.readDone = resolve));
  }

  start(): void {
    void this.watchLoop();
  }

  close(): void {
    this.closed = true;
    this.stopWatch?.();
  }

  ready(): Promise<void> {
    return Promise.race([this.firstRead, sleep(READY_WAIT_MS)]);
  }

  async create(key: string, value: T): Promise<number> {
    return this.write(key, value, (kv, data) => kv.create(storageKey(key), data));
  }

  async update(key: string, value: T, revision: number): Promise<number> {
    return this.write(key, value, (kv, data) => kv.update(storageKey(key), data, revision));
  }

  async put(key: string, value: T): Promise<number> {
    return this.write(key, value, (kv, data) => kv.put(storageKey(key), data));
  }

  async remove(key: string): Promise<void> {
    const kv = await this.bucket();
    await kv.delete(storageKey(key)).catch((error: unknown) => {
      throw storeError(error);
    });
    this.drop(key);
  }

  private async write(key: string, value: T, send: (kv: KV, data: Uint8Array) => Promise<number>): Promise<number> {
    const kv = await this.bucket();
    const at = Date.now();
    let revision: number;
    try {
      revision = await send(kv, seal(this.options.identity, this.options.kind, key, value, at));
    } catch (error) {
      throw storeError(error);
    }
    // Readers of this host see what it wrote at once; the watch brings the same revision again.
    this.take({ key, value, revision, signer: this.options.identity.publicKey, by: this.options.identity.id, at });
    return revision;
  }

  private async bucket(): Promise<KV> {
    return this.options.bucket().catch((error: unknown) => {
      throw storeError(error);
    });
  }

  /** One watch at a time, made again (after a pause) whenever it fails or ends. */
  private async watchLoop(): Promise<void> {
    for (let attempt = 0; !this.closed; attempt++) {
      try {
        await this.watchOnce();
        attempt = 0;
      } catch (error) {
        this.options.onAvailability(false, storeError(error).message);
        this.readDone();
      }
      if (!this.closed) await sleep(RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]);
    }
  }

  private async watchOnce(): Promise<void> {
    const kv = await this.options.bucket();
    const expected = (await kv.status()).values;
    const watcher = await kv.watch();
    this.stopWatch = () => watcher.stop();
    if (this.closed) return watcher.stop();
    this.options.onAvailability(true, null);
    // The watch first replays the last value of every key; once it has, keys it did not replay are gone.
    const replayed = new Set<string>();
    let replaying = true;
    const replayDone = () => {
      replaying = false;
      for (const key of this.all().map((e) => e.key)) if (!replayed.has(key)) this.drop(key);
      this.readDone();
    };
    if (expected === 0) replayDone();
    for await (const entry of watcher) {
      const key = logicalKey(entry.key);
      if (replaying) replayed.add(key);
      this.hear(key, entry);
      if (replaying && (replayed.size >= expected || entry.isUpdate)) replayDone();
    }
  }

  private hear(key: string, entry: KvEntry): void {
    if (entry.operation !== 'PUT') return this.drop(key);
    const drop = (reason: string) => {
      this.options.health.drop('records', reason, `${entry.bucket}.${entry.key}`);
      this.drop(key);
    };
    const opened = unseal(entry.value, this.options.kind, key);
    if (!opened.ok) return drop(opened.reason);
    const parsed = this.options.schema.safeParse(opened.body);
    if (!parsed.success) return drop(`not a ${this.options.kind} record`);
    if (this.options.accept && !this.options.accept(key, opened.signer, parsed.data)) return drop('signed by a key that may not write it');
    this.take({ key, value: parsed.data, revision: entry.revision, signer: opened.signer.text, by: opened.signer.id, at: opened.at });
  }
}

/** What went wrong with the store, in words; a lost conditional write is a RecordConflict. */
export function storeError(error: unknown): HangarError {
  if (error instanceof HangarError) return error;
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
  if (typeof code === 'number' && WRONG_LAST_SEQUENCE.includes(code)) return new RecordConflict();
  if (/jetstream is not enabled/i.test(message)) {
    return new HangarError('failed', "the cluster's NATS server keeps no state: start it with JetStream (nats-server -js -sd DIR)");
  }
  if (/stream not found/i.test(message)) return new HangarError('failed', "the cluster's store is not made yet: a viewer makes it when it joins");
  if (/timeout/i.test(message)) return new HangarError('failed', "the cluster's store did not answer (is the NATS server reachable?)");
  if (/permissions violation/i.test(message)) return new HangarError('forbidden', `the NATS server refused this host: ${message}`);
  return new HangarError('failed', `the cluster's store: ${message}`);
}
