// `hangar cluster members`, on an admin: each machine it invited, with its role, key id, who invited it and when,
// when it used its invitation (read from the cluster's store, when the server answers), when it was last seen (from
// this home's running agent, for a node) and whether it was revoked.
import type { AdminState, MemberRecord } from './admin-home.ts';
import { parsePublicKey } from './node-key.ts';
import { adminContext, adminConnection } from './invite.ts';
import { claimedAt, openMembers } from './store/grants.ts';
import { memberInboxOf } from './subjects.ts';
import { messageOf } from '../../shared/error-text.ts';

export interface MemberView {
  name: string;
  role: MemberRecord['role'];
  id: string;
  invitedBy: string;
  invitedAt: string;
  expires: string | null;
  /** When it used its invitation; null when not yet (or not known: the server did not answer). */
  joined: string | null;
  lastSeen: string | null;
  revoked: string | null;
  /** The server refuses it, but its grant was not withdrawn: the nodes trust its key until a revoke again finishes it. */
  revocationCutShort: boolean;
}

export interface MemberFacts {
  /** When each invitation was used, by its id; null when the server did not answer. */
  claims: Map<string, number> | null;
  /** When each node was last seen, by its id. */
  seen: Map<string, string>;
}

const at = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

export function memberViews(state: AdminState, facts: MemberFacts): MemberView[] {
  return state.members.map((m) => {
    const id = parsePublicKey(m.key)?.id ?? '';
    return {
      name: m.name, role: m.role, id, invitedBy: m.invitedBy, invitedAt: at(m.invitedAt)!, expires: at(m.expires),
      joined: m.invite === null ? at(m.invitedAt) : at(facts.claims?.get(m.invite)), lastSeen: facts.seen.get(id) ?? null, revoked: at(m.revokedAt),
      revocationCutShort: m.withdrawn === false,
    };
  });
}

const UNKNOWN = 'who used an invitation is not known';

/** When each invitation was used, as the store says; or why that is not known, in a line. */
export async function readClaims(home: string): Promise<Map<string, number> | string> {
  const { state, joined } = await adminContext(home);
  const invites = state.members.flatMap((m) => (m.invite ? [m.invite] : []));
  const nc = await adminConnection(home, joined, UNKNOWN).catch((error: unknown) => messageOf(error));
  if (typeof nc === 'string') return nc;
  try {
    const members = await openMembers(nc, false, memberInboxOf(joined.name));
    const claims = new Map<string, number>();
    for (const invite of invites) {
      const when = await claimedAt(members, invite);
      if (when !== null) claims.set(invite, when);
    }
    return claims;
  } catch (error) {
    return `the cluster's store could not be read (${messageOf(error)}): ${UNKNOWN}`;
  } finally {
    await nc.close();
  }
}
