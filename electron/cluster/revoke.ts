// `hangar cluster revoke`, on an admin. Revoking a machine puts its NATS user on the
// HANGAR account's revocation list, pushes the account's new JWT to the server through the system account (the
// server closes that user's connection at once and refuses it from then on), withdraws its grant in the store (no
// node takes its calls or records any more) and writes the server's configuration again, so a restart keeps it.
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { connectCluster } from '../nats/connect.ts';
import { membersNamed, writeAdmin, type AdminState, type MemberRecord } from './admin-home.ts';
import { parsePublicKey } from './node-key.ts';
import { revocations, writeServerConfig } from './init.ts';
import { adminContext, grant, withAdminLink } from './invite.ts';
import { accountJwts, systemCreds } from './operator-jwts.ts';
import { HangarError } from '../../shared/errors.ts';

const PUSH_TIMEOUT_MS = 5000;

export interface Revoked {
  member: MemberRecord;
  /** The server's configuration, written again with the revocation. */
  config: string;
  /** This call finished a revocation an earlier one began (the server took it, its grant was not withdrawn). */
  finished: boolean;
}

/**
 * `config`: where the server's configuration is now, when it is no longer where init wrote it; kept as its place from
 * then on. A configuration gone from its place is not written anew there: the server runs on a copy elsewhere, which a
 * restart would take without the revocation. A member whose revocation was cut short is revoked again from the start,
 * with its first time: each step is one a second run may take again.
 */
export async function revoke(home: string, which: string, config?: string): Promise<Revoked> {
  const { state, joined, admin } = await adminContext(home);
  const member = toRevoke(membersNamed(state, which), which);
  if (member.key === admin.publicKey) throw new HangarError('forbidden', 'an admin cannot revoke itself');
  state.config = await configPlace(state.config, config, member.name);
  const finished = member.revokedAt !== null;
  member.revokedAt ??= Date.now();
  member.withdrawn = false;
  await pushHangarJwt(state);
  await writeAdmin(home, state);
  await writeServerConfig(state);
  const id = parsePublicKey(member.key)!.id;
  const undone = `${member.name} is revoked on the server (its connection closed, its credential refused), but its grant was not withdrawn: hangar cluster revoke ${member.name} again finishes it`;
  await withAdminLink(home, joined, undone, (nc) => grant(nc, joined.name, admin, id, { key: member.key, name: member.name, role: member.role, invitedBy: member.invitedBy, revoked: true }, member.revokedAt!));
  member.withdrawn = true;
  await writeAdmin(home, state);
  return { member, config: state.config, finished };
}

/** The one member `which` names that is not revoked, or whose revocation was cut short; else one line saying why none. */
function toRevoke(all: MemberRecord[], which: string): MemberRecord {
  const named = all.filter((m) => m.revokedAt === null);
  if (named.length > 1) throw new HangarError('invalid-request', `"${which.slice(0, 80)}" names ${named.length} members: give one's key`);
  const member = named[0] ?? all.find((m) => m.withdrawn === false);
  if (member) return member;
  const revoked = all.at(-1);
  if (revoked) {
    throw new HangarError('conflict', `${revoked.name} was revoked already, at ${new Date(revoked.revokedAt!).toISOString()}: a new invitation joins it again (hangar cluster invite --role ${revoked.role} --name ${revoked.name})`);
  }
  throw new HangarError('not-found', `the cluster has no member "${which.slice(0, 80)}" left to revoke (hangar cluster members lists them)`);
}

/** Where the configuration is written: the file --config names, else the one init wrote, if it is still there. */
async function configPlace(recorded: string, given: string | undefined, name: string): Promise<string> {
  const place = given === undefined ? recorded : resolve(given);
  if (await stat(place).then((found) => found.isFile(), () => false)) return place;
  if (given !== undefined) throw new HangarError('not-found', `--config ${place} is no file: it names the configuration the cluster's server runs on (nats-server -c FILE); nothing was revoked`);
  throw new HangarError('not-found', `the cluster's server configuration is no longer where hangar cluster init wrote it (${recorded}): nothing was revoked. Say where it is now, and it is written there from then on: hangar cluster revoke ${name} --config FILE`);
}

/** Sends HANGAR's JWT, with every revocation, to the server; throws one line unless it took it. */
async function pushHangarJwt(state: AdminState): Promise<void> {
  const jwts = await accountJwts(state.seeds, revocations(state));
  const nc = await connectCluster({ url: state.url, name: 'hangar-revoke', creds: await systemCreds(state.seeds), undone: 'nothing was revoked' });
  try {
    const answer = await nc.request('$SYS.REQ.CLAIMS.UPDATE', jwts.hangar, { timeout: PUSH_TIMEOUT_MS });
    const reply = answer.json<{ data?: { code?: number; message?: string }; error?: { description?: string } }>();
    if (reply.data?.code !== 200) throw new HangarError('failed', `the server did not take the account's new JWT: ${reply.error?.description ?? reply.data?.message ?? 'no reason given'}`);
  } finally {
    await nc.close();
  }
}
