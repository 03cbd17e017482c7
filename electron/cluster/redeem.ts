// An invitation redeemed (HANGAR_JOIN_TOKEN=<token> hangar agent): checks the invitation (whole, signed by an admin it
// names, not expired), reaches the cluster with the credential it carries (the server must be that cluster's), marks
// the invitation used in the cluster's store (a second use is refused there), and only then keeps what it carries: this
// machine's key, the admins to trust, the credential and the membership (joined-home.ts). Anything refused leaves the
// home as it was.
import { readFile, rm } from 'node:fs/promises';
import { connectCluster } from '../nats/connect.ts';
import { CALL_WINDOW_MS } from './call-guard.ts';
import { clusterOf } from './cluster-id.ts';
import { readAdmin } from './admin-home.ts';
import { adoptKey, clusterKeyFile, loadIdentity, parsePublicKey } from './node-key.ts';
import { decodeInvitation, expiredLine, type Invitation } from './invitation.ts';
import { credsFile, forgetJoined, readJoined, writeJoined, type Joined } from './joined-home.ts';
import { claimInvite, openMembers, releaseClaim } from './store/grants.ts';
import { memberInboxOf } from './subjects.ts';
import { addTrust, readTrust, removeTrust } from './trust.ts';
import { HangarError } from '../../shared/errors.ts';

/**
 * The membership of this home that `token` replaces: one for the same cluster whose credential the server refuses (an
 * admin revoked it). Null for any other: a home that administers the cluster, or still logs in, keeps its own.
 */
export async function replacedMembership(home: string, token: string): Promise<Joined | null> {
  const joined = await readJoined(home);
  if (!joined || (await readAdmin(home))) return null;
  let cluster: string;
  try {
    cluster = decodeInvitation(token).cluster;
  } catch {
    return null;
  }
  if (cluster !== joined.cluster) return null;
  try {
    await (await connectCluster({ url: joined.url, name: joined.name, credsFile: credsFile(home), inboxPrefix: memberInboxOf(joined.name) })).close();
    return null;
  } catch (error) {
    return error instanceof HangarError && error.code === 'forbidden' ? joined : null;
  }
}

export async function redeemInvitation(home: string, token: string): Promise<Joined> {
  // Before the invitation is looked at: whatever it is, this home has its membership, unless the invitation replaces it.
  const joined = await readJoined(home);
  const refused = joined && (await replacedMembership(home, token));
  if (joined && !refused) throw new HangarError('conflict', `this home joined the cluster already, as ${joined.name}: run hangar agent without an invitation (--join, HANGAR_JOIN_TOKEN), or join from a new home (--home)`);
  const invitation = decodeInvitation(token);
  const expired = expiredLine(invitation);
  if (expired) throw new HangarError('conflict', expired);
  // The key of a membership the server refuses gives way to the key of the invitation that replaces it.
  const refusedCreds = refused && (await readFile(credsFile(home), 'utf8'));
  const kept = await readFile(clusterKeyFile(home), 'utf8').catch(() => null);
  const ownKey = parsePublicKey(invitation.key);
  if (ownKey) {
    // An invitation for the key this machine made (an adopted cluster's): the home must hold it.
    const held = kept === null ? null : (await loadIdentity(home)).publicKey;
    if (held !== ownKey.text) throw new HangarError('conflict', `this invitation is for the key ${ownKey.id}, which this home does not hold (${held ? `it holds ${parsePublicKey(held)!.id}` : 'it holds none'}): join from the home where hangar cluster key printed it (--home)`);
  } else if (kept !== null && kept !== invitation.key && !refused) throw new HangarError('conflict', `${clusterKeyFile(home)} holds another cluster key: join from a new home (--home), or move it away`);
  await claimThen(invitation, async () => {
    const trustedBefore = new Set((await readTrust(home)).map((e) => e.key));
    try {
      if (!ownKey) await adoptKey(home, invitation.key, Boolean(refused));
      for (const admin of invitation.admins) if (!trustedBefore.has(admin)) await addTrust(home, admin, 'admin');
      await writeJoined(home, membershipOf(invitation), invitation.creds);
    } catch (error) {
      await forgetJoined(home);
      if (kept === null) await rm(clusterKeyFile(home), { force: true });
      else if (refused) await adoptKey(home, kept, true);
      if (refused) await writeJoined(home, refused, refusedCreds!);
      for (const admin of invitation.admins) if (!trustedBefore.has(admin)) await removeTrust(home, admin).catch(() => undefined);
      throw error;
    }
  });
  return membershipOf(invitation);
}

const membershipOf = (invitation: Invitation): Joined => ({
  url: invitation.url, cluster: invitation.cluster, name: invitation.name, role: invitation.role, admins: invitation.admins, labels: invitation.labels,
});

/**
 * Reaches the cluster as the invited machine, marks the invitation used, then keeps what it carries (`keep`): refused
 * when it was used, or the server is another cluster's; the mark is taken back when what it carries cannot be kept.
 */
async function claimThen(invitation: Invitation, keep: () => Promise<void>): Promise<void> {
  const nc = await connectCluster({ url: invitation.url, name: invitation.name, creds: invitation.creds, inboxPrefix: memberInboxOf(invitation.name), flag: '--join' })
    .catch((error: Error) => {
      if (!/refused the credentials/.test(error.message)) throw error;
      throw new HangarError('forbidden', `the server at ${invitation.url} refused this invitation's credential: it is another cluster's, not in operator mode, or the machine was revoked (hangar cluster members)`);
    });
  try {
    const server = clusterOf(nc.info);
    if (server !== invitation.cluster) throw new HangarError('conflict', `this invitation is for cluster ${invitation.cluster}, but the server at ${invitation.url} is ${server || 'not a Hangar cluster made by hangar cluster init'}`);
    const members = await openMembers(nc, false, memberInboxOf(invitation.name));
    const serverNow = await claimInvite(members, invitation.invite, invitation.name);
    const skew = Date.now() - serverNow;
    if (serverNow > invitation.exp) throw new HangarError('conflict', `this invitation expired at ${new Date(invitation.exp).toISOString()} by the cluster server's clock: ask an admin for a new one (hangar cluster invite)`);
    if (Math.abs(skew) > CALL_WINDOW_MS) {
      // Its calls or a node's would be refused: it joins once the clock is right, with the same invitation.
      await releaseClaim(members, invitation.invite);
      throw new HangarError('failed', `this machine's clock is ${Math.round(Math.abs(skew) / 1000)} s ${skew > 0 ? 'ahead of' : 'behind'} the cluster server's (at most ${CALL_WINDOW_MS / 1000} s): set it right (NTP) and run the same command again`);
    }
    await keep().catch(async (error: unknown) => {
      await releaseClaim(members, invitation.invite).catch(() => undefined);
      throw error;
    });
  } finally {
    await nc.close();
  }
}
