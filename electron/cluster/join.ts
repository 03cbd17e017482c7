// Joins this host to the cluster in the role it was given. Loaded only by a host that joins one: it alone brings in
// the NATS client.
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import type { NodeEvent, ClusterRole, ClusterStatusView, NodeCard } from '../../shared/types.ts';
import type { Envelope } from '../core/invoke.ts';
import { connectCluster, type ClusterConnectOptions } from '../nats/connect.ts';
import { clusterOf } from './cluster-id.ts';
import { ClusterHealth } from './health.ts';
import { loadIdentity, parsePublicKey, type PublicKey } from './node-key.ts';
import { LinkState } from './link-state.ts';
import type { LocalNodeApi } from '../core/local-node-api.ts';
import { Member } from './member.ts';
import { Presence } from './presence.ts';
import { RemoteEvents } from './remote-events.ts';
import { Caller } from './request.ts';
import { ClusterStore } from './store/cluster-store.ts';
import { grantsViewer } from './store/grants.ts';
import type { Stores } from './store/home-stores.ts';
import { BUCKETS, callSubject, eventsSubject, inboxPrefixOf, kvSubject, presenceSubject } from './subjects.ts';
import { ViolationWords, type OwnSubjects } from './violation-words.ts';
import { TrustList } from './trust.ts';
import { HangarError } from '../../shared/errors.ts';

/** A host's link to the cluster (made here: this module alone loads the NATS client). */
export interface ClusterLink {
  role: ClusterRole;
  /** This machine's node id in the cluster. */
  id: string;
  /** Its name there. */
  name: string;
  heartbeatMs: number;
  /** Serves this machine's node to the cluster (a node role). */
  member: { serve(method: unknown, params: unknown): Promise<Envelope>; card(): NodeCard | null; refreshSoon(): void } | null;
  /** The source of the drift the member's card reports. */
  followDrift(source: () => number): void;
  /** Whether a record signed by this key (this node's own, or one this home trusts) may make the node act. */
  signerTrusted(signer: string): Promise<boolean>;
  /** The name the cluster knows a key by, from its id (a member's, an admin's, a node's, a trust list label); null when none is known. */
  nameOfKey(id: string): string | null;
  /** The cluster's durable state: desired versions, rollouts, each node's convergence. */
  stores: Stores;
  /**
   * The members heard from (a viewer role), while the table is watched: `look` makes it live and waits for its first
   * round of cards; `watch` keeps it live until released (a viewer-only host's always is), telling `heard` of every
   * card or beat taken meanwhile.
   */
  presence: {
    cards(): NodeCard[]; card(id: string): NodeCard; has(id: string): boolean; look(): Promise<void>; watch(heard?: (id: string) => void): () => void;
    /** Whether node `id` was revoked long enough ago to be listed no more. */
    forgotten(id: string): boolean;
  } | null;
  /** How long a call to another node may take before it counts as unanswered. */
  callTimeoutMs: number;
  /** Sends one signed call to a node; rejects with a RequestFailure. */
  request(id: string, data: string, timeoutMs: number): Promise<string>;
  /** Other nodes' events and members' cards, as they are taken. */
  on(event: 'event', listener: (e: NodeEvent) => void): unknown;
  status(): ClusterStatusView;
  close(): Promise<void>;
}

export interface LinkOptions extends ClusterConnectOptions {
  node: LocalNodeApi;
  home: string;
  role: ClusterRole;
  /** How the role was given, in words (`--cluster-role viewer`, the invitation's role). */
  roleFrom?: string | undefined;
  /** --insecure-any-caller: act on every call, signed or not. */
  anyCaller: boolean;
  heartbeatMs: number;
  callTimeoutMs: number;
  /** An admin viewer's --cluster-sweep: remove stored values it does not take once this old (store/sweep.ts). */
  sweepAfterMs?: number | undefined;
  /** The admins whose grants this host takes (a machine that joined by invitation): their viewers are trusted too. */
  grantors?: string[] | undefined;
}

const VIOLATION_COALESCE_MS = 1000;

/**
 * A machine that joined by invitation and whose credential the server refuses: most likely an admin revoked it, and no
 * try again will change that.
 */
function refusedMember(error: unknown, options: LinkOptions): unknown {
  if (!(error instanceof HangarError) || error.code !== 'forbidden' || (options.grantors ?? []).length === 0) return error;
  return new HangarError('forbidden', `cannot join the cluster at ${options.url}: the server refuses this machine's credential (${options.credsFile ?? "the invitation's"}): an admin revoked it (hangar cluster members, on an admin, says when), or the server runs another cluster's configuration; a new invitation joins it again (hangar cluster invite, on an admin)`);
}

/** What the server refuses a node that joined with a credential not made for it: the subjects its id or inbox names. */
function ownSubjects(id: string, inboxPrefix: string, options: LinkOptions): OwnSubjects {
  const subjects = [presenceSubject(id), callSubject(id), eventsSubject(id), kvSubject(BUCKETS.status, id)];
  const invited = (options.grantors ?? []).length > 0;
  return {
    holds: (subject) => subjects.includes(subject) || subject.startsWith(`${inboxPrefix}.`),
    id,
    credential: options.credsFile ?? (options.creds !== undefined ? "the invitation's" : options.user ? `user ${options.user}` : 'its token'),
    remedy: invited ? 'join it with an invitation of its own (hangar cluster invite, on an admin)' : 'write the configuration again naming this machine\'s key (hangar cluster nats-config --node NAME=KEY, the key hangar cluster key prints here)',
  };
}

export async function joinCluster(options: LinkOptions): Promise<ClusterLink> {
  const key = await loadIdentity(options.home);
  const serves = options.role !== 'viewer';
  const views = options.role !== 'node';
  // A machine that joined by invitation logs in with its credential alone: its inbox is named after it.
  const inboxPrefix = options.inboxPrefix ?? inboxPrefixOf(options.user);
  const health = new ClusterHealth(undefined, new ViolationWords(serves ? ownSubjects(key.id, inboxPrefix, options) : null));
  const link = new LinkState();
  const nc = await connectCluster({ ...options, inboxPrefix, revoked: () => link.revoked }).catch((error: unknown) => {
    throw refusedMember(error, options);
  });
  // Everything this host signs from here on is for the cluster its server names.
  const identity = { ...key, cluster: clusterOf(nc.info) };
  void link.follow(nc.status(), health);
  const trust = new TrustList(options.home);
  const emitter = new EventEmitter<{ event: [NodeEvent] }>();
  const emit = (event: NodeEvent) => emitter.emit('event', event);
  // What a node acts on and what a viewer shows are decided by the same list: the keys this home trusts.
  const trusts = async (signer: PublicKey) => options.anyCaller || (await trust.holds(signer));
  const store = new ClusterStore({ nc, identity, health, viewer: views, trusts, stateDir: join(options.home, 'state'), sweepAfterMs: options.sweepAfterMs, grantors: options.grantors });
  trust.on('change', () => store.reread());
  const grants = store.grants;
  grants?.on('change', () => trust.setGranted(new Map(grants.all().filter((g) => grantsViewer(g.value)).map((g) => [g.key, g.value.key]))));
  const trustTimer = setInterval(() => void trust.refresh().catch(() => false), options.heartbeatMs);

  // The node's drift from its desired versions, which the host's converger reports once it follows this link.
  let drift = () => 0;
  const member = serves
    ? new Member({
        nc, node: options.node, identity, trust, anyCaller: options.anyCaller, health, name: options.name, heartbeatMs: options.heartbeatMs, stateDir: join(options.home, 'state'),
        drift: () => drift(),
      })
    : null;
  const checkMs = Math.max(10, Math.min(250, Math.floor(options.heartbeatMs / 4)));
  const presence = views
    ? new Presence({ nc, selfId: member ? identity.id : null, keyId: identity.id, trusted: (id) => trust.hasId(id), checkMs, heartbeatMs: options.heartbeatMs, health, cluster: identity.cluster, selfCard: () => member?.current() ?? null })
    : null;
  grants?.on('change', () => presence?.setRevoked(new Map(grants.all().filter((g) => g.value.revoked).map((g) => [g.key, g.at]))));
  const events = presence ? new RemoteEvents(nc, member ? identity.id : null, presence, health, emit, identity.cluster) : null;
  const caller = views ? new Caller(nc, identity, inboxPrefix, health) : null;
  const status = (): ClusterStatusView => ({
    role: options.role,
    ...(options.roleFrom !== undefined && { roleFrom: options.roleFrom }),
    id: identity.id,
    key: identity.publicKey,
    trusted: trust.ids().length,
    openToAnyCaller: options.anyCaller,
    ...health.view(),
    link: link.view(),
    store: store.view(),
    untrusted: store.untrusted(),
  });
  const statusChanged = () => emit({ type: 'cluster-status', node: 'local', status: status() });
  presence?.on('member', (card) => emit({ type: 'member', node: card.id, member: card }));
  presence?.on('removed', (id) => emit({ type: 'member-removed', node: id }));
  // The other nodes' events concern whoever watches the cluster through this host, and no one else.
  presence?.on('watching', (watching) => (watching ? events?.start() : events?.close()));
  link.on('change', (view) => {
    presence?.setLinked(view.connected);
    // Writes made while the link was down were not heard.
    if (view.connected) store.reread();
    statusChanged();
  });
  // A refusal repeated many times a second (a flood someone else causes) tells the viewers at most once a second.
  let violationTimer: NodeJS.Timeout | undefined;
  health.on('violation', () => {
    violationTimer ??= setTimeout(() => {
      violationTimer = undefined;
      statusChanged();
    }, VIOLATION_COALESCE_MS);
  });
  store.on('availability', statusChanged);
  // A host that is no node is there to watch; a node's own first heartbeat lands in its table when it is watched.
  if (!member) presence?.watch();
  store.start();
  try {
    await member?.start();
  } catch (error) {
    clearInterval(trustTimer);
    await store.close();
    await nc.close();
    throw error;
  }

  return {
    role: options.role,
    id: identity.id,
    name: options.name,
    heartbeatMs: options.heartbeatMs,
    member,
    followDrift: (source) => {
      drift = source;
    },
    signerTrusted: async (signer) => {
      if (signer === identity.publicKey) return true;
      const key = parsePublicKey(signer);
      return key !== null && (await trusts(key));
    },
    nameOfKey: (id) => {
      if (id === identity.id) return options.name;
      // A grant names the member it is for, and, as its signer, the admin who invited it.
      for (const g of grants?.all() ?? []) {
        if (g.key === id) return g.value.name;
        if (g.by === id) return g.value.invitedBy;
      }
      return (presence?.has(id) ? presence.card(id).name : null) ?? trust.label(id);
    },
    presence,
    stores: store,
    callTimeoutMs: options.callTimeoutMs,
    request: (id, data, timeoutMs) => caller!.request(id, data, timeoutMs),
    on: (event, listener) => emitter.on(event, listener),
    status,
    close: async () => {
      presence?.close();
      events?.close();
      caller?.close();
      await member?.close();
      clearInterval(trustTimer);
      clearTimeout(violationTimer);
      await store.close();
      await nc.close();
    },
  };
}
