// `hangar cluster invite`, on an admin: makes the invited machine's NATS user (its role's permissions, in a user JWT
// the HANGAR account signs) and its Hangar key, writes a signed grant for that key into the cluster's store (the nodes
// then take a viewer as they take the keys of their own trust list), and returns the one-use invitation that carries
// them. The server's configuration is neither edited nor reloaded.
import type { NatsConnection } from '@nats-io/transport-node';
import { connectCluster } from '../nats/connect.ts';
import { adminOf, writeAdmin, type AdminState } from './admin-home.ts';
import { identityFromPem, loadIdentity, newKeyPem, notAKey, parsePublicKey, type ClusterIdentity } from './node-key.ts';
import { encodeInvitation, INVITE_MAX_MS, newInviteId, type InvitedRole } from './invitation.ts';
import { credsFile, readJoined, type Joined } from './joined-home.ts';
import { machineCreds } from './operator-jwts.ts';
import { checkMachineName } from './permissions.ts';
import { claimSubject, openMembers, writeGrant, type GrantBody } from './store/grants.ts';
import { memberInboxOf } from './subjects.ts';
import { HangarError } from '../../shared/errors.ts';

export interface InviteInput {
  home: string;
  role: InvitedRole;
  name?: string | undefined;
  labels: Record<string, string>;
  expiresMs: number;
  /** The machine's own key (`hangar cluster key` there): it keeps it and its node id; by default one is made for it. */
  key?: string | undefined;
}

export interface Invited {
  token: string;
  name: string;
  role: InvitedRole;
  expires: string;
}

export async function invite(input: InviteInput): Promise<Invited> {
  const { state, joined, admin } = await adminContext(input.home);
  const name = checkMachineName(input.name ?? `${input.role}-${Math.random().toString(16).slice(2, 6)}`);
  if (state.members.some((m) => m.name === name && m.revokedAt === null)) throw new HangarError('conflict', `the cluster has a member named ${name} already (hangar cluster members)`);
  if (!(input.expiresMs > 0 && input.expiresMs <= INVITE_MAX_MS)) throw new HangarError('invalid-request', '--expires wants a time from 1m to 7d');
  const own = input.key === undefined ? null : parsePublicKey(input.key.trim());
  if (input.key !== undefined && !own) throw new HangarError('bad-input', `--key ${notAKey(input.key)}`);
  const pem = own ? null : newKeyPem();
  const key = own ? { id: own.id, publicKey: own.text } : identityFromPem(pem!)!;
  if (state.members.some((m) => m.key === key.publicKey && m.revokedAt === null)) throw new HangarError('conflict', `key ${key.id} is a member's already (hangar cluster members)`);
  const inviteId = newInviteId();
  const [node, viewer] = [input.role !== 'viewer', input.role !== 'node'];
  const { creds, user } = await machineCreds(state.seeds, { name, nodeId: node ? key.id : null, viewerKey: viewer ? key.publicKey : null, viewer, admin: false }, [claimSubject(inviteId)]);
  await withAdminLink(input.home, joined, 'no invitation was made', (nc) => grant(nc, joined.name, admin, key.id, { key: key.publicKey, name, role: input.role, invitedBy: joined.name, revoked: false }));
  const now = Date.now();
  const exp = now + input.expiresMs;
  state.members.push({ name, role: input.role, user, key: key.publicKey, invitedBy: joined.name, invitedAt: now, expires: exp, invite: inviteId, revokedAt: null });
  await writeAdmin(input.home, state);
  const token = encodeInvitation({
    url: state.url, cluster: state.cluster, name, role: input.role, labels: input.labels, creds, key: pem ?? key.publicKey,
    admins: [admin.publicKey], by: admin.publicKey, invite: inviteId, exp,
  }, admin);
  return { token, name, role: input.role, expires: new Date(exp).toISOString() };
}

/** This home's admin state, its membership and its key, signing for its cluster. */
export async function adminContext(home: string): Promise<{ state: AdminState; joined: Joined; admin: ClusterIdentity }> {
  const state = await adminOf(home);
  const joined = await readJoined(home);
  if (!joined) throw new HangarError('not-found', 'this home administers a cluster but holds no membership of it (state/cluster-join.json is gone): restore it from a backup');
  return { state, joined, admin: { ...(await loadIdentity(home)), cluster: state.cluster } };
}

/** A connection of the admin's own; `undone` says what the command did not do when the server cannot be reached. */
export function adminConnection(home: string, joined: Joined, undone: string): Promise<NatsConnection> {
  return connectCluster({ url: joined.url, name: `${joined.name}-admin`, credsFile: credsFile(home), inboxPrefix: memberInboxOf(joined.name), undone });
}

/** Runs `work` on a connection of the admin's own, closed after. */
export async function withAdminLink<T>(home: string, joined: Joined, undone: string, work: (nc: NatsConnection) => Promise<T>): Promise<T> {
  const nc = await adminConnection(home, joined, undone);
  try {
    return await work(nc);
  } finally {
    await nc.close();
  }
}

/** Writes a grant into the members bucket (made first if it is not there) on the admin `name`'s connection. */
export async function grant(nc: NatsConnection, name: string, admin: ClusterIdentity, id: string, body: GrantBody, at?: number): Promise<void> {
  const kv = await openMembers(nc, true, memberInboxOf(name));
  await writeGrant(kv, admin, admin.cluster ?? '', id, body, at);
}
