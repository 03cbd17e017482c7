// What the home that administers the cluster keeps, owner-only, in <home>/state/cluster-admin.json: the operator's
// and the accounts' seeds (whoever holds them runs the cluster), where its server's configuration was written, and
// every machine it invited: its NATS user, its Hangar key, who invited it, when, and whether it was revoked.
import { join } from 'node:path';
import * as z from 'zod';
import { parsePublicKey } from './node-key.ts';
import { readOwnerJson, writeOwnerJson } from './owner-file.ts';
import { HangarError } from '../../shared/errors.ts';

export const adminFile = (home: string) => join(home, 'state', 'cluster-admin.json');

const memberSchema = z.object({
  name: z.string(),
  role: z.enum(['node', 'viewer', 'node+viewer']),
  /** Its NATS user's public key. */
  user: z.string(),
  /** Its Hangar key. */
  key: z.string(),
  invitedBy: z.string(),
  invitedAt: z.number(),
  /** When its invitation expires; null for the admin itself. */
  expires: z.number().nullable(),
  invite: z.string().nullable(),
  revokedAt: z.number().nullable(),
  /**
   * Whether its revocation got as far as its configuration and its grant: false while it has not (the server took it,
   * then the command was cut short). Absent on a member revoked before this was kept, and on one not revoked.
   */
  withdrawn: z.boolean().optional(),
});

const adminSchema = z.object({
  v: z.literal(1),
  seeds: z.object({ operator: z.string(), system: z.string(), store: z.string(), hangar: z.string() }),
  url: z.string(),
  cluster: z.string(),
  /** The server's configuration, written again when a machine is revoked. */
  config: z.string(),
  storeDir: z.string(),
  resolverDir: z.string(),
  listen: z.string(),
  members: z.array(memberSchema),
});

export type AdminState = z.infer<typeof adminSchema>;
export type MemberRecord = z.infer<typeof memberSchema>;

export function readAdmin(home: string): Promise<AdminState | null> {
  return readOwnerJson(adminFile(home), adminSchema, "it holds the cluster's keys: restore it from a backup");
}

/** The admin's state, or one line saying this home administers no cluster. */
export async function adminOf(home: string): Promise<AdminState> {
  const state = await readAdmin(home);
  if (!state) throw new HangarError('not-found', `this home administers no cluster (${adminFile(home)}): run this on the machine that ran hangar cluster init, or pass its --home`);
  return state;
}

export function writeAdmin(home: string, state: AdminState): Promise<void> {
  return writeOwnerJson(adminFile(home), state);
}

/** The members named by `which`: a name, a Hangar key or its id, or a NATS user key. */
export function membersNamed(state: AdminState, which: string): MemberRecord[] {
  return state.members.filter((m) => m.name === which || m.key === which || m.user === which || parsePublicKey(m.key)?.id === which);
}
