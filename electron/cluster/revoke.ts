// `hangar cluster revoke`, on an admin. Revoking a machine puts its NATS user on the
// HANGAR account's revocation list, pushes the account's new JWT to the server through the system account (the
// server closes that user's connection at once and refuses it from then on), withdraws its grant in the store (no
// node takes its calls or records any more) and writes the server's configuration again, so a restart keeps it.
import { connectCluster } from '../nats/connect.ts';
import { membersNamed, writeAdmin, type AdminState, type MemberRecord } from './admin-home.ts';
import { parsePublicKey } from './node-key.ts';
import { revocations, writeServerConfig } from './init.ts';
import { adminContext, grant, withAdminLink } from './invite.ts';
import { accountJwts, systemCreds } from './operator-jwts.ts';
import { HangarError } from '../../shared/errors.ts';

const PUSH_TIMEOUT_MS = 5000;

export async function revoke(home: string, which: string): Promise<MemberRecord> {
  const { state, joined, admin } = await adminContext(home);
  const all = membersNamed(state, which);
  const named = all.filter((m) => m.revokedAt === null);
  const revoked = all.at(-1);
  if (named.length === 0 && revoked) {
    throw new HangarError('conflict', `${revoked.name} was revoked already, at ${new Date(revoked.revokedAt!).toISOString()}: a new invitation joins it again (hangar cluster invite --role ${revoked.role} --name ${revoked.name})`);
  }
  if (named.length === 0) throw new HangarError('not-found', `the cluster has no member "${which.slice(0, 80)}" left to revoke (hangar cluster members lists them)`);
  if (named.length > 1) throw new HangarError('invalid-request', `"${which.slice(0, 80)}" names ${named.length} members: give one's key`);
  const member = named[0]!;
  if (member.key === admin.publicKey) throw new HangarError('forbidden', 'an admin cannot revoke itself');
  member.revokedAt = Date.now();
  await pushHangarJwt(state);
  await writeAdmin(home, state);
  await writeServerConfig(state);
  const id = parsePublicKey(member.key)!.id;
  await withAdminLink(home, joined, (nc) => grant(nc, joined.name, admin, id, { key: member.key, name: member.name, role: member.role, invitedBy: member.invitedBy, revoked: true }));
  return member;
}

/** Sends HANGAR's JWT, with every revocation, to the server; throws one line unless it took it. */
async function pushHangarJwt(state: AdminState): Promise<void> {
  const jwts = await accountJwts(state.seeds, revocations(state));
  const nc = await connectCluster({ url: state.url, name: 'hangar-revoke', creds: await systemCreds(state.seeds) });
  try {
    const answer = await nc.request('$SYS.REQ.CLAIMS.UPDATE', jwts.hangar, { timeout: PUSH_TIMEOUT_MS });
    const reply = answer.json<{ data?: { code?: number; message?: string }; error?: { description?: string } }>();
    if (reply.data?.code !== 200) throw new HangarError('failed', `the server did not take the account's new JWT: ${reply.error?.description ?? reply.data?.message ?? 'no reason given'}`);
  } finally {
    await nc.close();
  }
}
