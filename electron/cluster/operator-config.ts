// The nats-server configuration of a cluster run on NATS's own decentralized authentication (operator-jwts.ts): the
// operator's JWT, the system account, and the accounts preloaded into a resolver that keeps what an admin pushes (an
// account's new JWT, with the users it revoked) in its own directory. No user and no password is in it: each machine
// brings its own user JWT, which the server checks against the account's key.
import type { AccountJwts } from './operator-jwts.ts';

export interface OperatorConfigInput {
  listen: string;
  /** The cluster's name (cluster-id.ts): every record and call is signed for it. */
  serverName: string;
  storeDir: string;
  /** Where the resolver keeps the account JWTs pushed to it. */
  resolverDir: string;
  jwts: AccountJwts;
  accounts: { system: string; store: string; hangar: string };
}

export function operatorConfig(input: OperatorConfigInput): string {
  const q = JSON.stringify;
  return [
    '# A Hangar cluster, written by `hangar cluster init`. No password is in it: each machine joins with a user JWT',
    '# that the HANGAR account\'s key signed (hangar cluster invite), carrying its role\'s permissions.',
    '',
    `listen: ${q(input.listen)}`,
    '',
    "# The cluster's name: every Hangar record and call is signed for it, so none is taken in another cluster.",
    `server_name: ${q(input.serverName)}`,
    '',
    "# The cluster's durable state, in the STORE account's key-value buckets.",
    `jetstream { store_dir: ${q(input.storeDir)} }`,
    '',
    `operator: ${q(input.jwts.operator)}`,
    `system_account: ${q(input.accounts.system)}`,
    '',
    "# An account's new JWT (a revoked machine) is pushed through the system account and kept here.",
    `resolver: { type: full, dir: ${q(input.resolverDir)}, allow_delete: false, interval: "2m" }`,
    'resolver_preload: {',
    `  # SYS`,
    `  ${input.accounts.system}: ${q(input.jwts.system)}`,
    '  # STORE: the buckets; no user logs into it',
    `  ${input.accounts.store}: ${q(input.jwts.store)}`,
    '  # HANGAR: every machine',
    `  ${input.accounts.hangar}: ${q(input.jwts.hangar)}`,
    '}',
    '',
  ].join('\n');
}
