// Settings → Cluster's invitations, on a host's home: an admin's home (`hangar cluster init`) makes them as `hangar
// cluster invite` does, and any home that joined no cluster redeems one as `HANGAR_JOIN_TOKEN=<token> hangar agent`
// does, with the same code. Refusals are one line for the user and never hold the token. The NATS client is loaded only
// to make or redeem.
import type { ClusterInviteRequest } from '../../shared/api.ts';
import { HangarError } from '../../shared/errors.ts';
import type { ClusterInvitation, ClusterInvitationsView } from '../../shared/types.ts';
import { readAdmin } from './admin-home.ts';
import { readJoined } from './joined-home.ts';

export interface Invitations {
  /** `connected`: the name this running host is in the cluster with, if it is in one. */
  view(connected: string | null): Promise<ClusterInvitationsView>;
  invite(request: ClusterInviteRequest): Promise<ClusterInvitation>;
  join(token: string): Promise<void>;
}

export function homeInvitations(home: string): Invitations {
  let joining = false;
  return {
    view: async (connected) => {
      const [admin, joined] = await Promise.all([readAdmin(home), readJoined(home)]);
      const member = joined && { cluster: joined.cluster, url: joined.url, name: joined.name, role: joined.role };
      return { admin: admin !== null, member, restart: member !== null && member.name !== connected };
    },
    invite: async (request) => {
      if (!(await readAdmin(home))) throw new HangarError('forbidden', 'this home administers no cluster: run hangar cluster init on it first');
      const { invite } = await import('./invite.ts');
      const made = await refusal(invite({ home, role: request.role, name: request.name, labels: request.labels, expiresMs: request.expiresMinutes * 60_000 }));
      return { command: `HANGAR_JOIN_TOKEN=${made.token} hangar agent`, name: made.name, role: made.role, expires: made.expires };
    },
    join: async (token) => {
      if (joining) throw new HangarError('conflict', 'an invitation is being redeemed already');
      joining = true;
      try {
        const { redeemInvitation } = await import('./redeem.ts');
        await refusal(redeemInvitation(home, token));
      } finally {
        joining = false;
      }
    },
  };
}

/** The CLI's one-line refusals, as the user's error. */
function refusal<T>(work: Promise<T>): Promise<T> {
  return work.catch((error: unknown) => {
    throw error instanceof HangarError ? error : new HangarError('conflict', error instanceof Error ? error.message : String(error));
  });
}
