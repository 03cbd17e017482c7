// A value kept in the cluster's key-value store, signed by the host that wrote it: its public key, its clock and an
// ed25519 signature over the kind of record, the key it is stored under, that time and the body's SHA-256. Whoever
// may write the bucket cannot forge a value, move one to another key or kind, or alter one; who may be believed is
// the reader's question (a node converges only on values a viewer it trusts signed).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { parsePublicKey, verifySignature, type ClusterIdentity, type PublicKey } from '../identity.ts';

export type RecordKind = 'desired' | 'rollout' | 'status';

/** Above any record Hangar writes (a rollout over a thousand nodes is ~200 KiB); the buckets refuse larger values too. */
export const RECORD_MAX_BYTES = 512 * 1024;

const sealedSchema = z.object({
  v: z.literal(1),
  by: z.string().max(128),
  at: z.number().int().min(0),
  body: z.string(),
  sig: z.string().max(256),
});

function signedBytes(kind: RecordKind, key: string, at: number, body: string): Buffer {
  const digest = createHash('sha256').update(body).digest('base64url');
  return Buffer.from(['hangar/1', 'record', kind, key, String(at), digest].join('\n'));
}

/** The bytes to store under `key`: `body` as JSON, signed with this host's key. */
export function seal(identity: ClusterIdentity, kind: RecordKind, key: string, body: unknown, at = Date.now()): Uint8Array {
  const text = JSON.stringify(body);
  const sig = identity.sign(signedBytes(kind, key, at, text)).toString('base64url');
  return Buffer.from(JSON.stringify({ v: 1, by: identity.publicKey, at, body: text, sig }));
}

export type Unsealed = { ok: true; signer: PublicKey; at: number; body: unknown } | { ok: false; reason: string };

/** A stored value checked: well formed, signed as `kind` for `key`, by the key it names. */
export function unseal(data: Uint8Array, kind: RecordKind, key: string): Unsealed {
  if (data.length > RECORD_MAX_BYTES) return { ok: false, reason: 'too large' };
  let parsed;
  try {
    parsed = sealedSchema.safeParse(JSON.parse(Buffer.from(data).toString()));
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  if (!parsed.success) return { ok: false, reason: 'unsigned' };
  const { by, at, body, sig } = parsed.data;
  const signer = parsePublicKey(by);
  if (!signer) return { ok: false, reason: 'not a key' };
  if (!verifySignature(signer, signedBytes(kind, key, at, body), Buffer.from(sig, 'base64url'))) return { ok: false, reason: 'bad signature' };
  try {
    return { ok: true, signer, at, body: JSON.parse(body) as unknown };
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
}
