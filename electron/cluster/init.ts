// `hangar cluster init`: this home becomes the cluster's first admin. It makes the operator's and the accounts' keys
// (admin-home.ts), writes a nats-server configuration in operator mode that listens where the URL says, and joins this
// machine as node, viewer and admin: `hangar agent` on this home then joins with no further option.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { isLoopback } from '../../shared/loopback.ts';
import { adoptNotes, moveStore, type OldConfig } from './adopt.ts';
import { adminFile, readAdmin, writeAdmin, type AdminState } from './admin-home.ts';
import { newClusterName } from './cluster-id.ts';
import { refuseExisting } from './config-out.ts';
import { loadIdentity } from './node-key.ts';
import { joinedFile, readJoined, writeJoined } from './joined-home.ts';
import { listenAddress, parseUrlOption } from './nats-config.ts';
import { operatorConfig } from './operator-config.ts';
import { accountJwts, machineCreds, newSeeds, publicOf, type ClusterSeeds } from './operator-jwts.ts';
import { checkMachineName } from './permissions.ts';
import { HangarError } from '../../shared/errors.ts';

export interface InitInput {
  home: string;
  url: string;
  /** Where the server's configuration is written; its store and accounts go beside it. */
  out: string;
  /** This machine's name in the cluster. */
  name: string;
  /** Says what the configuration will do that the URL might not make plain, before anything is written. */
  say(line: string): void;
  /** A cluster set up with `nats-config` moved to invitations (adopt.ts): its name, address and store are kept. */
  adopt?: OldConfig | undefined;
}

export interface InitResult {
  config: string;
  listen: string;
  cluster: string;
  name: string;
  /** What --adopt kept and changed, a line each. */
  notes: string[];
}

export async function initCluster(input: InitInput): Promise<InitResult> {
  const name = checkMachineName(input.name);
  if (await readAdmin(input.home)) throw new HangarError('conflict', `this home administers a cluster already (${adminFile(input.home)}): hangar cluster invite adds machines to it`);
  if (await readJoined(input.home)) throw new HangarError('conflict', `this home joined a cluster already (${joinedFile(input.home)}): run init from a home of its own (--home)`);
  const url = parseUrlOption(input.url);
  if (url.protocol !== 'nats:') throw new HangarError('invalid-request', `--url wants nats://HOST:PORT, got "${input.url}"`);
  const listen = input.adopt?.listen ?? listenAddress(input.url, undefined).listen;
  if (!input.adopt && !isLoopback(url.hostname)) input.say(`nats-server will listen on every interface (${listen}): the other machines join it at ${input.url}`);
  const seeds = newSeeds();
  const out = resolve(input.out);
  const state: AdminState = {
    v: 1, seeds, url: input.url, cluster: input.adopt?.cluster ?? newClusterName(), config: out, listen,
    storeDir: input.adopt?.storeDir ?? join(dirname(out), 'nats-store'), resolverDir: join(dirname(out), 'nats-accounts'), members: [],
  };
  await refuseExisting(input.adopt ? adoptedPaths(input.adopt, state) : [out, state.storeDir, state.resolverDir]);
  const identity = await loadIdentity(input.home);
  const { creds, user } = await machineCreds(seeds, { name, nodeId: identity.id, viewerKey: identity.publicKey, viewer: true, admin: true });
  state.members.push({ name, role: 'node+viewer', user, key: identity.publicKey, invitedBy: name, invitedAt: Date.now(), expires: null, invite: null, revokedAt: null });
  await writeServerConfig(state);
  await writeAdmin(input.home, state);
  await writeJoined(input.home, { url: input.url, cluster: state.cluster, name, role: 'node+viewer', admins: [identity.publicKey], labels: {} }, creds);
  const storeMoved = input.adopt ? await moveStore(state.storeDir, publicOf(seeds.store)) : false;
  return { config: out, listen, cluster: state.cluster, name, notes: input.adopt ? adoptNotes(input.adopt, name, storeMoved) : [] };
}

/** The server's configuration, with the users revoked so far: written at init, and again at each revocation. */
export async function writeServerConfig(state: AdminState): Promise<void> {
  const jwts = await accountJwts(state.seeds, revocations(state));
  await mkdir(dirname(state.config), { recursive: true });
  await writeFile(state.config, operatorConfig({ ...state, serverName: state.cluster, jwts, accounts: accountKeys(state.seeds) }), { mode: 0o600 });
}

/** --adopt writes over the configuration it moves and keeps its store: only another file, or accounts, are refused. */
function adoptedPaths(adopt: OldConfig, state: AdminState): string[] {
  return [...(resolve(adopt.file) === state.config ? [] : [state.config]), state.resolverDir];
}

/** The NATS users revoked, each with when (seconds): HANGAR's JWT refuses them. */
export function revocations(state: AdminState): Record<string, number> {
  return Object.fromEntries(state.members.filter((m) => m.revokedAt !== null).map((m) => [m.user, Math.floor(m.revokedAt! / 1000)]));
}

const accountKeys = (seeds: ClusterSeeds) => ({ system: publicOf(seeds.system), store: publicOf(seeds.store), hangar: publicOf(seeds.hangar) });
