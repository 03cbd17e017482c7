// An invitation to join the cluster, as `hangar cluster invite` prints it and the agent takes it (HANGAR_JOIN_TOKEN, or
// --join - on stdin): the NATS URL, the cluster's name, the one machine's NATS user credential (its role's permissions
// in a user JWT the HANGAR account signed) and Hangar key (or, for a machine that keeps its own, its public key), the
// admins it is to trust, a single-use id and an expiry, all signed by the admin that made it. Whoever holds it holds
// that machine's credential and key until the machine is revoked, so it never goes on a command line; it joins once
// (its id is marked used in the cluster's store as it joins) and is short-lived.
import { randomBytes } from 'node:crypto';
import * as z from 'zod';
import { identityFromPem, parsePublicKey, verifySignature, type ClusterIdentity } from './node-key.ts';
import { HangarError } from '../../shared/errors.ts';
import { invitationToken } from '../../shared/invitation-line.ts';

const PREFIX = 'hjoin1.';
const TOKEN_MAX = 16 * 1024;

export type { InvitedRole } from '../../shared/types.ts';

const bodySchema = z.object({
  url: z.string().max(512),
  cluster: z.string().max(128),
  name: z.string().max(64),
  role: z.enum(['node', 'viewer', 'node+viewer']),
  labels: z.record(z.string().max(64), z.string().max(256)),
  creds: z.string().max(4096),
  key: z.string().max(512),
  admins: z.array(z.string().max(128)).min(1).max(64),
  by: z.string().max(128),
  invite: z.string().regex(/^[0-9a-f]{24}$/),
  exp: z.number().int(),
});

export type Invitation = z.infer<typeof bodySchema>;

/** The longest an invitation may stay usable. */
export const INVITE_MAX_MS = 7 * 86_400_000;

export const newInviteId = () => randomBytes(12).toString('hex');

const signed = (payload: string) => Buffer.from(`hangar/join/1\n${payload}`);

/** The token: the invitation signed by `admin` (whose key it names in `by`). */
export function encodeInvitation(invitation: Invitation, admin: ClusterIdentity): string {
  const payload = Buffer.from(JSON.stringify(invitation)).toString('base64url');
  return `${PREFIX}${payload}.${admin.sign(signed(payload)).toString('base64url')}`;
}

/**
 * Reads a token, or the whole line `hangar cluster invite` printed as it was pasted; throws one line saying what is
 * wrong with it. Expiry and use are checked by the caller.
 */
export function decodeInvitation(token: string): Invitation {
  const text = invitationToken(token);
  if (!text.startsWith(PREFIX) || text.length > TOKEN_MAX) throw new HangarError('bad-input', 'this is not a Hangar invitation (hangar cluster invite prints one, starting with hjoin1.)');
  const [payload = '', sig = '', ...more] = text.slice(PREFIX.length).split('.');
  let invitation: Invitation;
  try {
    if (more.length > 0) throw new Error('more parts');
    invitation = bodySchema.parse(JSON.parse(Buffer.from(payload, 'base64url').toString()));
  } catch {
    throw new HangarError('bad-input', 'this invitation is damaged (cut short or edited): copy it again whole, or ask an admin for a new one');
  }
  const admin = parsePublicKey(invitation.by);
  if (!admin || !invitation.admins.includes(invitation.by) || !verifySignature(admin, signed(payload), Buffer.from(sig, 'base64url'))) {
    throw new HangarError('bad-input', 'this invitation was edited after an admin made it (its signature does not match): ask an admin for a new one');
  }
  if (!identityFromPem(invitation.key) && !parsePublicKey(invitation.key)) throw new HangarError('bad-input', 'this invitation holds no usable key: ask an admin for a new one');
  return invitation;
}

/** A clear line when the invitation is past its expiry by this machine's clock. */
export function expiredLine(invitation: Invitation, now = Date.now()): string | null {
  if (now <= invitation.exp) return null;
  const minutes = Math.round((now - invitation.exp) / 60_000);
  return `this invitation expired at ${new Date(invitation.exp).toISOString()} (${minutes} min ago by this machine's clock): ask an admin for a new one (hangar cluster invite)`;
}
