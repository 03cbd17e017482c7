// Cluster homes for tests, set up as a user does it, and what "nothing changed on disk" compares.
import type { KV } from '@nats-io/kv';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { formatPublicKey, keyId, loadIdentity, type ClusterIdentity } from './identity.ts';
import { seal, type RecordKind } from './store/sealed.ts';
import { addTrust } from './trust.ts';

/** Each home's key made (`hangar cluster key`), each trusting the others' (`hangar cluster trust KEY`). */
export async function trustingHomes(homes: string[]): Promise<ClusterIdentity[]> {
  const identities = await Promise.all(homes.map((home) => loadIdentity(home)));
  for (const [i, home] of homes.entries()) {
    for (const [j, other] of identities.entries()) if (i !== j) await addTrust(home, other.publicKey, `test-${j}`);
  }
  return identities;
}

/** A key made on the spot, kept in no home, as an attacker makes thousands. */
export function madeUpKey(): ClusterIdentity {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = (publicKey.export({ type: 'spki', format: 'der' }) as Buffer).subarray(12);
  return { id: keyId(raw), publicKey: formatPublicKey(raw), sign: (data) => sign(null, data, privateKey) };
}

/**
 * `body` signed by `identity` as a `kind` record of `cluster` under `key`, written over what the bucket holds under
 * `storedKey` now, as a Hangar writer does it: valid in every way but who signed it. Undefined `body` removes.
 */
export async function writeSigned(kv: KV, cluster: string, identity: ClusterIdentity, kind: RecordKind, key: string, body: unknown, storedKey = key): Promise<number> {
  const head = (await kv.get(storedKey))?.revision ?? 0;
  return kv.put(storedKey, seal(identity, kind, key, { cluster, after: head }, body), { previousSeq: head });
}

/** Every file under `dir` with its size and content hash: what "nothing changed on disk" compares. */
async function snapshot(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (at: string): Promise<void> => {
    for (const entry of await readdir(at, { withFileTypes: true }).catch(() => [])) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) await walk(path);
      else out.push(`${path} ${(await stat(path)).size} ${createHash('sha256').update(await readFile(path)).digest('hex')}`);
    }
  };
  await walk(dir);
  return out.sort();
}

/** What the node keeps that a call could change: its backends and its settings. */
export async function nodeState(home: string): Promise<string[]> {
  const settings = await readFile(join(home, 'state', 'settings.json'), 'utf8').catch(() => 'no settings file');
  return [...(await snapshot(join(home, 'backends'))), `settings: ${settings}`];
}

