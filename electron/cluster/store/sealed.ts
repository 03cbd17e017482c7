// A value kept in the cluster's key-value store, signed by the host that wrote it: its public key, and an ed25519
// signature over the cluster it is for, the kind of record, the key it is stored under, the revision of that key it
// was written over (`after`), its time and the body's SHA-256 (or that it removes the record). Whoever may write the
// bucket cannot forge a value, move one to another key, kind or cluster, or alter one. `after` is what orders a key's
// values: the writer sends it to the server as the key's expected last revision, and the server keeps that header
// with the value, so a reader knows the value was taken right after that revision and can never be written again
// later (the key has moved on). Who may be believed is the reader's question.
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { TIME_MAX_MS, TIME_MIN_MS } from '../../../shared/event-schema.ts';
import { parsePublicKey, verifySignature, type ClusterIdentity, type PublicKey } from '../node-key.ts';

export type RecordKind = 'desired' | 'rollout' | 'status' | 'grant';

/** Above any record Hangar writes (a rollout over a thousand nodes is ~200 KiB); the buckets refuse larger values too. */
export const RECORD_MAX_BYTES = 512 * 1024;

const sealedSchema = z.object({
  v: z.literal(2),
  by: z.string().max(128),
  cluster: z.string().max(128),
  after: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  at: z.number().int().min(TIME_MIN_MS).max(TIME_MAX_MS),
  /** The body as JSON; null for a removal. */
  body: z.string().nullable(),
  sig: z.string().max(256),
});

/** Where a value is written: the cluster it is for and the revision of its key it replaces. */
export interface Placement {
  cluster: string;
  after: number;
}

function signedBytes(kind: RecordKind, key: string, place: Placement, at: number, body: string | null): Buffer {
  const digest = body === null ? 'removed' : createHash('sha256').update(body).digest('base64url');
  return Buffer.from(['hangar/2', 'record', place.cluster, kind, key, String(place.after), String(at), digest].join('\n'));
}

/** The bytes to store under `key`: `body` as JSON (undefined: the record's removal), signed with this host's key. */
export function seal(identity: ClusterIdentity, kind: RecordKind, key: string, place: Placement, body: unknown, at = Date.now()): Uint8Array {
  const text = body === undefined ? null : JSON.stringify(body);
  const sig = identity.sign(signedBytes(kind, key, place, at, text)).toString('base64url');
  return Buffer.from(JSON.stringify({ v: 2, by: identity.publicKey, cluster: place.cluster, after: place.after, at, body: text, sig }));
}

export type Unsealed = { ok: true; signer: PublicKey; after: number; at: number; body: unknown; removed: boolean } | { ok: false; reason: string };

/** A stored value checked: well formed, signed as `kind` for `key` in `cluster`, by the key it names. */
export function unseal(data: Uint8Array, kind: RecordKind, key: string, cluster: string): Unsealed {
  if (data.length > RECORD_MAX_BYTES) return { ok: false, reason: 'too large' };
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(data).toString());
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  if (typeof raw === 'object' && raw !== null && (raw as { v?: unknown }).v === 1) return { ok: false, reason: 'written by an earlier Hangar (bound to no cluster or revision)' };
  const parsed = sealedSchema.safeParse(raw);
  if (!parsed.success) return { ok: false, reason: 'unsigned' };
  const { by, after, at, body, sig } = parsed.data;
  const signer = parsePublicKey(by);
  if (!signer) return { ok: false, reason: 'not a key' };
  if (parsed.data.cluster !== cluster) return { ok: false, reason: 'signed for another cluster' };
  if (!verifySignature(signer, signedBytes(kind, key, { cluster, after }, at, body), Buffer.from(sig, 'base64url'))) return { ok: false, reason: 'bad signature' };
  if (body === null) return { ok: true, signer, after, at, body: null, removed: true };
  try {
    return { ok: true, signer, after, at, body: JSON.parse(body) as unknown, removed: false };
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
}
