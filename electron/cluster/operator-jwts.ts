// NATS's own decentralized authentication for a Hangar cluster: an operator, whose key signs the accounts; a system
// account (the server's own, through which an admin pushes an account's new JWT); STORE, which holds the buckets and
// which no user logs into; and HANGAR, every machine's account, which imports from STORE exactly the services the roles
// use (permissions.ts). Each machine is a user of HANGAR whose JWT, signed by HANGAR's key, carries its role's
// permissions: no server configuration is edited to add one, and revoking one is a new HANGAR JWT.
import { Algorithms, encodeAccount, encodeOperator, encodeUser, fmtCreds } from '@nats-io/jwt';
import { createAccount, createOperator, createUser, fromSeed, type KeyPair } from '@nats-io/nkeys';
import { MEMBER_INBOXES, memberInboxOf } from './subjects.ts';
import { permissionsOf, storeServices, STORE_FILE_BYTES, STORE_STREAMS, type MachineRoles } from './permissions.ts';

/** The seeds an admin keeps (owner-only): whoever holds them runs the cluster. */
export interface ClusterSeeds {
  operator: string;
  system: string;
  store: string;
  hangar: string;
}

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString();

export function newSeeds(): ClusterSeeds {
  return { operator: text(createOperator().getSeed()), system: text(createAccount().getSeed()), store: text(createAccount().getSeed()), hangar: text(createAccount().getSeed()) };
}

const keyPair = (seed: string): KeyPair => fromSeed(Buffer.from(seed));
export const publicOf = (seed: string): string => keyPair(seed).getPublicKey();

const V2 = { algorithm: Algorithms.v2 };
/** An account's limits, none but those given (a limit a JWT leaves out is 0 to nats-server: no connection at all). */
const limits = (more: Record<string, number | boolean> = {}) => ({ subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1, ...more });
/** JetStream for an account: none unless given. */
const NO_JETSTREAM = { mem_storage: 0, disk_storage: 0, streams: 0, consumer: 0 };

export interface AccountJwts {
  operator: string;
  system: string;
  store: string;
  hangar: string;
}

/** Every JWT the server needs; `revoked` are HANGAR's users cut off, each with the time it was (seconds). */
export async function accountJwts(seeds: ClusterSeeds, revoked: Record<string, number>): Promise<AccountJwts> {
  const operator = keyPair(seeds.operator);
  const store = publicOf(seeds.store);
  const services = storeServices();
  return {
    operator: await encodeOperator('hangar', operator, { system_account: publicOf(seeds.system) }, V2),
    system: await encodeAccount('SYS', keyPair(seeds.system), { limits: limits(NO_JETSTREAM) }, { ...V2, signer: operator }),
    store: await encodeAccount('STORE', keyPair(seeds.store), {
      // Only the operator makes accounts, and it makes no other: a public export reaches HANGAR alone.
      exports: services.map((subject) => ({ name: subject, subject, type: 'service' as const })),
      limits: limits({ conn: 0, leaf: 0, disk_storage: STORE_FILE_BYTES, mem_storage: 0, streams: STORE_STREAMS, consumer: 0 }),
    }, { ...V2, signer: operator }),
    hangar: await encodeAccount('HANGAR', keyPair(seeds.hangar), {
      imports: services.map((subject) => ({ name: subject, subject, account: store, type: 'service' as const })),
      revocations: revoked,
      limits: limits(NO_JETSTREAM),
    }, { ...V2, signer: operator }),
  };
}

/** A machine's `.creds` (its user JWT and seed), its role's permissions in the JWT; `extra` adds subjects it may publish. */
export async function machineCreds(seeds: ClusterSeeds, machine: MachineRoles, extra: string[] = [], userSeed = text(createUser().getSeed())): Promise<{ creds: string; user: string }> {
  const user = keyPair(userSeed);
  // A node answers into members' inboxes only (no response permission: a reply subject a caller names could then be
  // any subject, a bucket's or the JetStream API's).
  const p = permissionsOf(machine, machine.nodeId ? [MEMBER_INBOXES] : [], memberInboxOf(machine.name));
  const jwt = await encodeUser(machine.name, user, keyPair(seeds.hangar), {
    pub: { allow: [...p.publish, ...extra] },
    sub: { allow: p.subscribe },
  }, V2);
  return { creds: text(fmtCreds(jwt, user)), user: user.getPublicKey() };
}

/** The system account's user, through which an admin pushes HANGAR's new JWT to the server. */
export async function systemCreds(seeds: ClusterSeeds): Promise<string> {
  const user = createUser();
  return text(fmtCreds(await encodeUser('hangar-admin', user, keyPair(seeds.system), {}, V2), user));
}
