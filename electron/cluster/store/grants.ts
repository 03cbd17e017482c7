// The members an admin invited, in the cluster's members bucket. A grant ("machine K, named N, in role R, invited by
// A"), signed by admin A, is kept under K's key id: every host that trusts A takes K as it takes the keys of its own
// trust list, so no one visits each node to add a viewer. Revoking K is a grant that says so, written over it: grants
// are records like the others (kv-records.ts), so an old one played back over a newer one is never taken. Beside them,
// `claim.<invite>` marks each invitation used, written once by the machine that joins with it.
import { Kvm, type KV } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import * as z from 'zod';
import type { ClusterIdentity } from '../node-key.ts';
import { BUCKETS } from '../subjects.ts';
import { makeBucket } from './make-bucket.ts';
import { seal } from './sealed.ts';
import { HangarError } from '../../../shared/errors.ts';

export interface GrantBody {
  key: string;
  name: string;
  role: 'node' | 'viewer' | 'node+viewer';
  invitedBy: string;
  revoked: boolean;
}

export const grantBodySchema: z.ZodType<GrantBody> = z.object({
  key: z.string().max(128),
  name: z.string().max(64),
  role: z.enum(['node', 'viewer', 'node+viewer']),
  invitedBy: z.string().max(64),
  revoked: z.boolean(),
});

/** Whether a grant makes its key one a host acts for: a viewer's, not revoked. */
export const grantsViewer = (grant: GrantBody) => !grant.revoked && grant.role !== 'node';

/** The members bucket, made first when `make` (an admin's). */
export async function openMembers(nc: NatsConnection, make: boolean, inboxPrefix?: string): Promise<KV> {
  if (make) await makeBucket(nc, BUCKETS.members);
  return new Kvm(jetstream(nc, inboxPrefix ? { watcherPrefix: inboxPrefix } : {})).open(BUCKETS.members, { allow_direct: true });
}

/**
 * Writes a grant over whatever its key holds now, signed by the admin `identity` for `cluster`; `at`, its time: a
 * revocation's is when the admin revoked, the one time every host shows for it.
 */
export async function writeGrant(kv: KV, identity: ClusterIdentity, cluster: string, id: string, grant: GrantBody, at?: number): Promise<number> {
  const head = (await kv.get(id))?.revision ?? 0;
  return kv.put(id, seal(identity, 'grant', id, { cluster, after: head }, grant, at), { previousSeq: head });
}

const claimKey = (invite: string) => `claim.${invite}`;
/** The subject the machine invited with `invite` may write, once, to say it used it. */
export const claimSubject = (invite: string) => `$KV.${BUCKETS.members}.${claimKey(invite)}`;

const claimSchema = z.object({ name: z.string().max(64), at: z.number() });

/** Marks an invitation used; throws one line when it was already. Resolves the server's clock as it stored the mark. */
export async function claimInvite(kv: KV, invite: string, name: string): Promise<number> {
  try {
    await kv.create(claimKey(invite), JSON.stringify({ name, at: Date.now() }));
  } catch (error) {
    const kept = await kv.get(claimKey(invite)).catch(() => null);
    if (!kept) throw error;
    const when = claimTime(kept.string());
    throw new HangarError('conflict', `this invitation was used already${when === null ? '' : ` at ${new Date(when).toISOString()}`}: each is used once; ask an admin for a new one (hangar cluster invite)`);
  }
  const stored = await kv.get(claimKey(invite));
  return stored ? stored.created.getTime() : Date.now();
}

/** Takes the mark back (the machine could not join after all): the invitation may be used again. */
export async function releaseClaim(kv: KV, invite: string): Promise<void> {
  await kv.delete(claimKey(invite));
}

/** When an invitation was used, as the machine that used it said; null when it was not (or says no time). */
export async function claimedAt(kv: KV, invite: string): Promise<number | null> {
  const kept = await kv.get(claimKey(invite));
  return kept && kept.operation === 'PUT' ? claimTime(kept.string()) : null;
}

function claimTime(text: string): number | null {
  try {
    const claim = claimSchema.safeParse(JSON.parse(text));
    return claim.success ? claim.data.at : null;
  } catch {
    return null;
  }
}
