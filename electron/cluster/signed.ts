// Signed NATS messages. Every call a viewer sends, and every card, event and reply a node sends, carries its
// sender's public key and an ed25519 signature in headers. What is signed names the cluster, the kind of message, the
// subject it was published on, the node it is for or from, the reply subject (a call's answer goes nowhere else), its
// time or part, a nonce and the body's SHA-256: a captured message cannot be replayed as another kind, in another
// cluster, sent to another node, or have its answer redirected. In a cluster with no name (cluster-id.ts) the bytes
// are those an earlier Hangar signed, so the two still speak to each other there.
import { createHash } from 'node:crypto';
import { headers as natsHeaders, type Msg, type MsgHdrs } from '@nats-io/transport-node';
import { parsePublicKey, verifySignature, type ClusterIdentity, type PublicKey } from './node-key.ts';

/** A beat: a node's signed word that it is there and stands by the card it last sent, between cards. */
export type SignedKind = 'call' | 'reply' | 'card' | 'event' | 'beat';

/** What a message says about itself beside its body; each field is signed. */
export interface Stamp {
  /** A call's and a node's messages: the sender's clock (ms) or sequence. */
  at?: string;
  /** A call's one-time value. */
  nonce?: string;
  /** A reply's part: "INDEX/COUNT". */
  part?: string;
  /** 'gzip' when the body is compressed. */
  encoding?: string;
}

const HEADER = { key: 'Hangar-Key', sig: 'Hangar-Sig', at: 'Hangar-At', nonce: 'Hangar-Nonce', part: 'Hangar-Part', encoding: 'Hangar-Encoding' } as const;
const STAMP_FIELDS = ['at', 'nonce', 'part', 'encoding'] as const;
/** Header values a peer sends are read only this far: nothing signed here is longer. */
const HEADER_VALUE_MAX = 128;

function signedBytes(cluster: string, kind: SignedKind, subject: string, node: string, reply: string, stamp: Stamp, body: Uint8Array): Buffer {
  const digest = createHash('sha256').update(body).digest('base64url');
  const scheme = cluster === '' ? ['hangar/1'] : ['hangar/2', cluster];
  return Buffer.from([...scheme, kind, subject, node, reply, ...STAMP_FIELDS.map((f) => stamp[f] ?? ''), digest].join('\n'));
}

/**
 * The headers that sign `body` as `kind` in the identity's cluster, published on `subject` about `node` (with `reply`
 * for a call). A beat leaves its key out: it is checked against the key of the card before it, and it is sent the
 * most often of all.
 */
export function sign(identity: ClusterIdentity, kind: SignedKind, subject: string, node: string, reply: string, stamp: Stamp, body: Uint8Array): MsgHdrs {
  const h = natsHeaders();
  if (kind !== 'beat') h.set(HEADER.key, identity.publicKey);
  h.set(HEADER.sig, identity.sign(signedBytes(identity.cluster ?? '', kind, subject, node, reply, stamp, body)).toString('base64url'));
  for (const field of STAMP_FIELDS) if (stamp[field] !== undefined) h.set(HEADER[field], stamp[field]);
  return h;
}

export type Checked = { ok: true; key: PublicKey; stamp: Stamp } | { ok: false; reason: string };

/**
 * Checks a message's signature as `kind` in `cluster` about `node`; who may have signed it is the caller's question.
 * `known`: the key a beat is checked against (it carries none).
 */
export function check(msg: Msg, kind: SignedKind, node: string, cluster: string, known?: PublicKey): Checked {
  const h = msg.headers;
  const sig = header(h, HEADER.sig);
  const key = kind === 'beat' ? known : parsePublicKey(header(h, HEADER.key));
  if (!sig || (kind !== 'beat' && !header(h, HEADER.key))) return { ok: false, reason: 'unsigned' };
  if (!key) return { ok: false, reason: 'not a key' };
  const stamp: Stamp = {};
  for (const field of STAMP_FIELDS) {
    const value = header(h, HEADER[field]);
    if (value) stamp[field] = value;
  }
  const bytes = signedBytes(cluster, kind, msg.subject, node, kind === 'call' ? (msg.reply ?? '') : '', stamp, msg.data);
  if (!verifySignature(key, bytes, Buffer.from(sig, 'base64url'))) return { ok: false, reason: 'bad signature' };
  return { ok: true, key, stamp };
}

/** The public key a message says it is signed with, unchecked (a cheap look before any signature work). */
export function signingKey(msg: Msg): string {
  return header(msg.headers, HEADER.key);
}

/** Whether a message says its body is compressed (unchecked, as signingKey). */
export function isCompressed(msg: Msg): boolean {
  return header(msg.headers, HEADER.encoding) !== '';
}

function header(h: MsgHdrs | undefined, name: string): string {
  const value = h?.get(name) ?? '';
  return value.length > HEADER_VALUE_MAX ? '' : value;
}

/**
 * A node's messages carry a number that only grows: each card and event is stamped with one, and a viewer takes
 * from each node only numbers above the last it took, so a recorded message cannot be played again.
 */
export class Sequence {
  private last = 0;

  next(): string {
    this.last = Math.max(Date.now() * 1000, this.last + 1);
    return String(this.last);
  }
}
