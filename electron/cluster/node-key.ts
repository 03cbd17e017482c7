// A home's identity in the cluster: one ed25519 key pair, kept in <home>/state/cluster-key (owner-only). As a viewer
// the host signs its calls with it; as a node it signs its cards, events and replies. The node id is derived from
// the public key, so a card, event or reply for node X can be checked against X's id alone, with nothing learned
// first. Node's own crypto does the work: ed25519 there is native, and no dependency is needed.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { chmod, link, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { unreadableFile } from '../core/unreadable-file.ts';
import { HangarError } from '../../shared/errors.ts';

export const clusterKeyFile = (home: string) => join(home, 'state', 'cluster-key');

/** How a public key is written for people: a prefix, then the raw key and a 2-byte checksum in base64url. */
const KEY_PREFIX = 'hk1_';
const RAW_KEY_BYTES = 32;
const CHECKSUM_BYTES = 2;
/** ed25519's SubjectPublicKeyInfo header; the raw key follows it. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export interface ClusterIdentity {
  /** The node id this key gives. */
  id: string;
  /** The public key as a trust list holds it. */
  publicKey: string;
  sign(data: Buffer): Buffer;
  /** The cluster its messages are signed for (cluster-id.ts), once joined; none: '' (an unnamed cluster). */
  cluster?: string;
}

/** Reads the home's key, making it on first use; a key file others can read is tightened to 600. */
export async function loadIdentity(home: string): Promise<ClusterIdentity> {
  const file = clusterKeyFile(home);
  let pem = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw unreadableFile(`this node's key ${file}`, error);
  });
  if (pem === null) pem = await createKeyFile(file);
  else if (((await stat(file)).mode & 0o077) !== 0) await chmod(file, 0o600);
  const identity = identityFromPem(pem);
  if (!identity) throw new HangarError('bad-input', `${file} does not hold a cluster ed25519 key: move it away to make a new one (this node's id changes with it)`);
  return identity;
}

/** The identity a private key (PKCS#8 PEM) gives; null when it is not an ed25519 key. */
export function identityFromPem(pem: string): ClusterIdentity | null {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch {
    return null;
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') return null;
  const raw = rawPublicKey(createPublicKey(privateKey));
  return { id: keyId(raw), publicKey: formatPublicKey(raw), sign: (data) => sign(null, data, privateKey) };
}

/** A new private key, as a home keeps it (PKCS#8 PEM): an admin makes one for each machine it invites. */
export function newKeyPem(): string {
  return generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
}

/** Gives a home the key an invitation brought; a home that holds another key keeps it (its node id is its key's), unless `replace`: its membership was refused. */
export async function adoptKey(home: string, pem: string, replace = false): Promise<void> {
  const file = clusterKeyFile(home);
  const kept = await readFile(file, 'utf8').catch(() => null);
  if (kept !== null && kept !== pem && !replace) throw new HangarError('conflict', `${file} holds another cluster key: join from a new home (--home), or move it away`);
  await mkdir(join(file, '..'), { recursive: true, mode: 0o700 });
  await writeFile(file, pem, { mode: 0o600 });
}

/** Made beside the final name and linked into place, so two processes racing to make it end with one key. */
async function createKeyFile(file: string): Promise<string> {
  await mkdir(join(file, '..'), { recursive: true, mode: 0o700 });
  const pem = newKeyPem();
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, pem, { mode: 0o600 });
  try {
    await link(temp, file);
    return pem;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return readFile(file, 'utf8');
  } finally {
    await rm(temp, { force: true });
  }
}

function rawPublicKey(key: KeyObject): Buffer {
  return (key.export({ type: 'spki', format: 'der' }) as Buffer).subarray(SPKI_PREFIX.length);
}

/** A key's id: the first 8 bytes of its SHA-256, in hex. A node's id is its key's id. */
export function keyId(raw: Buffer): string {
  return createHash('sha256').update(raw).digest('hex').slice(0, 16);
}

export function formatPublicKey(raw: Buffer): string {
  return KEY_PREFIX + Buffer.concat([raw, checksum(raw)]).toString('base64url');
}

function checksum(raw: Buffer): Buffer {
  return createHash('sha256').update(raw).digest().subarray(0, CHECKSUM_BYTES);
}

export interface PublicKey {
  text: string;
  id: string;
  key: KeyObject;
}

const parsed = new Map<string, PublicKey | null>();
const PARSED_KEPT = 4096;

/** A public key from its text, or null when it is not one (a typo fails its checksum). */
export function parsePublicKey(text: string): PublicKey | null {
  const known = parsed.get(text);
  if (known !== undefined) return known;
  const key = decode(text);
  // Keys heard from the cluster are cached; a flood of made-up ones only turns the cache over.
  if (parsed.size >= PARSED_KEPT) parsed.clear();
  parsed.set(text, key);
  return key;
}

/** Why `text`, which parsePublicKey refused, is no key, for whoever typed or pasted it. */
export function notAKey(text: string): string {
  const shown = text.trim().slice(0, 80);
  if (!shown.startsWith(KEY_PREFIX)) return `"${shown}" is not a Hangar key (hangar cluster key prints one, starting with ${KEY_PREFIX})`;
  return `"${shown}" fails its checksum: a character of it was mistyped or cut off (copy it whole, as hangar cluster key prints it)`;
}

function decode(text: string): PublicKey | null {
  if (typeof text !== 'string' || !text.startsWith(KEY_PREFIX) || text.length > 64) return null;
  const bytes = Buffer.from(text.slice(KEY_PREFIX.length), 'base64url');
  if (bytes.length !== RAW_KEY_BYTES + CHECKSUM_BYTES) return null;
  const raw = bytes.subarray(0, RAW_KEY_BYTES);
  if (!checksum(raw).equals(bytes.subarray(RAW_KEY_BYTES)) || formatPublicKey(raw) !== text) return null;
  try {
    return { text, id: keyId(raw), key: createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' }) };
  } catch {
    return null;
  }
}

export function verifySignature(key: PublicKey, data: Buffer, signature: Buffer): boolean {
  try {
    return verify(null, data, key.key, signature);
  } catch {
    return false;
  }
}
