// `hangar cluster nats-config`: a complete nats-server (2.9+) configuration for a Hangar cluster, one user per
// machine with a generated password and the permissions of its roles, JetStream on, and the commands that start
// each agent. A node may serve only its own subjects and answer only into the viewers' inboxes; a viewer may call and
// listen, and read only its own inbox. In the cluster's key-value store a viewer makes the buckets and writes desired
// versions (under its own key id, when its key is given) and rollout records; a node reads those two and writes only
// its own convergence status. No role may make a JetStream consumer (whose deliveries can be sent to any subject) or
// reach any other JetStream API; an admin viewer may also remove a stored value, for its sweep (store/sweep.ts).
//
// The buckets live in an account of their own that no user logs into, STORE; the users' account, HANGAR, imports from
// it exactly the services the roles use (a bucket's stream info, direct gets, its creation, and writes to its keys).
// JetStream answers a request on whatever reply subject the requester names, in its own account: through a service
// import that is a reply subject the server makes up in STORE, and the answer is routed back into HANGAR, where no
// bucket is (nats-server 2.9 does not send a routed answer on through another import: store-writes.test.ts tries it).
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { isLoopback } from '../../shared/loopback.ts';
import { newClusterName } from './cluster-id.ts';
import { notAKey, parsePublicKey } from './node-key.ts';
import { checkMachineName, permissionsOf, SWEEP_AFTER_SECONDS, storeServices, STORE_FILE_BYTES, STORE_STREAMS } from './permissions.ts';
import { inboxPrefixOf } from './subjects.ts';
import { HangarError } from '../../shared/errors.ts';

export interface ClusterMachine {
  name: string;
  /** Set for a node: its id (from its key). */
  nodeId: string | null;
  /** Set for a viewer whose key was given: the nodes are told to trust it. */
  viewerKey: string | null;
  viewer: boolean;
  /** A viewer that sweeps from the store what it does not take (store/sweep.ts). */
  admin: boolean;
  password: string;
}

export interface NatsConfigInput {
  /** NAME=ID or NAME=KEY, as `hangar cluster key` prints them on each node. */
  nodes: string[];
  /** NAME or NAME=KEY. */
  viewers: string[];
  /** Viewers (given with their keys) that sweep the store. */
  admins?: string[];
  /** Where nats-server listens; by default where `url` says (listenAddress). */
  listen?: string;
  storeDir: string;
  /** The address agents join, in the printed commands. */
  url: string;
}

const NODE_ID = /^[0-9a-f]{16}$/;

/** Reads the machines from the command line: names checked, each node's id from its id or key. */
export function clusterMachines(input: Pick<NatsConfigInput, 'nodes' | 'viewers' | 'admins'>): ClusterMachine[] {
  const machines = new Map<string, ClusterMachine>();
  const machine = (name: string) => {
    checkMachineName(name);
    const known = machines.get(name) ?? { name, nodeId: null, viewerKey: null, viewer: false, admin: false, password: randomBytes(24).toString('base64url') };
    machines.set(name, known);
    return known;
  };
  for (const option of input.nodes) {
    const [name = '', value = ''] = splitOption(option);
    const key = parsePublicKey(value);
    const id = key?.id ?? (NODE_ID.test(value) ? value : null);
    if (!id && value.startsWith('hk1_')) throw new HangarError('invalid-request', `--node ${name}: ${notAKey(value)}`);
    if (!id) throw new HangarError('invalid-request', `--node wants NAME=ID or NAME=KEY (hangar cluster key prints both on that machine), got "${option.slice(0, 100)}"`);
    const m = machine(name);
    if (m.nodeId) throw new HangarError('invalid-request', `--node ${name} is given twice`);
    m.nodeId = id;
  }
  for (const option of input.viewers) {
    const [name = '', value] = splitOption(option);
    const m = machine(name);
    if (value !== undefined) {
      const key = parsePublicKey(value);
      if (!key && value.startsWith('hk1_')) throw new HangarError('invalid-request', `--viewer ${name}: ${notAKey(value)}`);
      if (!key) throw new HangarError('invalid-request', `--viewer wants NAME or NAME=KEY (hangar cluster key prints the key on that machine), got "${option.slice(0, 100)}"`);
      m.viewerKey = key.text;
    }
    m.viewer = true;
  }
  for (const name of input.admins ?? []) {
    const m = machines.get(name);
    if (!m?.viewerKey) throw new HangarError('invalid-request', `--admin ${name.slice(0, 80)} must name a viewer given with its key (--viewer ${name.slice(0, 80)}=KEY): it sweeps what that key does not take`);
    m.admin = true;
  }
  const list = [...machines.values()];
  if (!list.some((m) => m.nodeId)) throw new HangarError('invalid-request', 'name at least one --node');
  const ids = list.flatMap((m) => (m.nodeId ? [m.nodeId] : []));
  if (new Set(ids).size !== ids.length) throw new HangarError('invalid-request', 'two --node names share one id: each machine has its own key');
  return list;
}

function splitOption(option: string): [string, string | undefined] {
  const at = option.indexOf('=');
  return at < 0 ? [option, undefined] : [option.slice(0, at), option.slice(at + 1)];
}

const list = (subjects: string[]) => `[${subjects.map((s) => JSON.stringify(s)).join(', ')}]`;

/** A node answers a call only in the inbox of a viewer: never on a subject a reply could otherwise name. */
function answerInboxes(m: ClusterMachine, machines: ClusterMachine[]): string[] {
  return machines.filter((v) => v.viewer && v !== m).map((v) => `${inboxPrefixOf(v.name)}.>`);
}

export function natsConfig(machines: ClusterMachine[], input: { listen: string; storeDir: string }): string {
  const users = machines.map((m) => {
    const p = permissionsOf(m, answerInboxes(m, machines));
    const roles = [m.nodeId && `node ${m.nodeId}`, m.viewer && 'viewer', m.admin && 'admin'].filter(Boolean).join(', ');
    return [
      `      # ${m.name}: ${roles}`,
      `      {`,
      `        user: ${JSON.stringify(m.name)}, password: ${JSON.stringify(m.password)}`,
      `        permissions: {`,
      `          publish: { allow: ${list(p.publish)} }`,
      `          subscribe: { allow: ${list(p.subscribe)} }`,
      `        }`,
      `      }`,
    ].join('\n');
  });
  return [
    '# A Hangar cluster, written by `hangar cluster nats-config`. It holds every password: keep it owner-only.',
    '# A node may serve only its own subjects and answer only into the viewers\' inboxes; a viewer may call the nodes',
    '# and listen to their cards and events, and read only its own inbox. In the key-value store, viewers make the',
    '# buckets and write desired versions (each under its own key id) and rollouts; a node reads those and writes only',
    '# its own status. No user may make a JetStream consumer. Hangar checks every call, card and stored value again with',
    '# its own keys (hangar cluster key, hangar cluster trust): these permissions are the second line.',
    '',
    `listen: ${JSON.stringify(input.listen)}`,
    '',
    "# The cluster's name: every Hangar record and call is signed for it, so none is taken in another cluster.",
    `server_name: ${JSON.stringify(newClusterName())}`,
    '',
    '# The cluster\'s durable state: desired versions, rollouts and convergence, in key-value buckets.',
    `jetstream { store_dir: ${JSON.stringify(input.storeDir)} }`,
    '',
    'accounts {',
    '  # The buckets, in an account no user logs into: a reply subject a user names is never one of theirs.',
    '  STORE: {',
    `    jetstream: { max_file: ${STORE_FILE_BYTES}, max_mem: 0, max_streams: ${STORE_STREAMS} }`,
    '    exports: [',
    ...storeServices().map((s) => `      { service: ${JSON.stringify(s)}, accounts: [HANGAR] }`),
    '    ]',
    '  }',
    '  HANGAR: {',
    '    imports: [',
    ...storeServices().map((s) => `      { service: { account: STORE, subject: ${JSON.stringify(s)} } }`),
    '    ]',
    '    users: [',
    users.join('\n'),
    '    ]',
    '  }',
    '}',
    '',
  ].join('\n');
}

const NATS_PORT = 4222;

/** --url as typed: one that is no URL at all (a port past 65535) is a usage error, said as such. */
export function parseUrlOption(url: string): URL {
  try {
    return new URL(url);
  } catch {
    throw new HangarError('invalid-request', `--url wants nats://HOST:PORT, got "${url}"`);
  }
}

/**
 * Where nats-server listens: where the URL the agents join says (a loopback URL on that loopback address, any other on
 * every interface), unless `listen` is given; then `note` says how it differs from the URL, if it does.
 */
export function listenAddress(url: string, listen: string | undefined): { listen: string; note: string | null } {
  const target = parseUrlOption(url);
  const port = target.port || String(NATS_PORT);
  const loopback = isLoopback(target.hostname);
  if (listen === undefined) return { listen: `${loopback ? (target.hostname === 'localhost' ? '127.0.0.1' : target.hostname) : '0.0.0.0'}:${port}`, note: null };
  const at = /^(.*):(\d+)$/.exec(listen);
  const host = at?.[1] ?? listen;
  const differences = [
    at?.[2] !== port && `port ${at?.[2] ?? NATS_PORT} while the agents are told to join port ${port}`,
    loopback && !isLoopback(host) && `on ${host}, beyond this machine, while the agents join it on loopback`,
    !loopback && isLoopback(host) && `on loopback only, while agents on other machines join ${target.hostname}`,
  ].filter(Boolean);
  return { listen, note: differences.length > 0 ? `nats-server will listen on ${listen}: ${differences.join('; ')} (${url})` : null };
}

/** Each agent on one machine takes its backends' ports from a range of its own, below Linux's ephemeral ports. */
const FIRST_PORT = 30100;
const PORTS_EACH = 100;

/**
 * What to run on each machine, in order: the trust it needs, then its agent. Every machine trusts every viewer: a node
 * to act on its calls and pins, a viewer to take the rollouts and pins the others write. A loopback URL means every
 * "machine" is this one: each then gets a home under `homesDir`, a free listening port and a port range of its own,
 * or the second agent would find the first one's.
 */
export function startCommands(machines: ClusterMachine[], url: string, homesDir: string): Array<{ machine: string; commands: string[] }> {
  const viewers = machines.filter((m) => m.viewer);
  const oneMachine = isLoopback(new URL(url).hostname);
  return machines.map((m, i) => {
    const home = oneMachine ? ['--home', join(homesDir, m.name)] : [];
    const ports = oneMachine ? ['--listen', '127.0.0.1:0', '--ports', `${FIRST_PORT + i * PORTS_EACH}-${FIRST_PORT + (i + 1) * PORTS_EACH - 1}`] : [];
    const role = m.nodeId && m.viewer ? [] : ['--cluster-role', m.nodeId ? 'node' : 'viewer'];
    const trust = viewers
      .filter((v) => v.name !== m.name)
      .map((v) => ['hangar', ...home, 'cluster', 'trust', v.viewerKey ?? `KEY_OF_${v.name}`, '--label', v.name].join(' '));
    const sweep = m.admin ? ['--cluster-sweep', String(SWEEP_AFTER_SECONDS)] : [];
    const agent = ['hangar', ...home, 'agent', '--cluster', url, '--name', m.name, '--cluster-user', m.name, ...role, ...sweep, ...ports].join(' ');
    return { machine: m.name, commands: [...trust, `HANGAR_CLUSTER_PASSWORD=${m.password} ${agent}`] };
  });
}

