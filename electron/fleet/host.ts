import { EventEmitter } from 'node:events';
import { LOCAL_NODE, type HangarApi, type LocalAiServerRequest, type NodeRef } from '../../shared/api.ts';
import { REVOKED } from '../../shared/cluster-link.ts';
import { HangarError } from '../../shared/errors.ts';
import { parseSelector, selects } from '../../shared/selector.ts';
import type { ClusterStatusView, LocalAiAction, LocalAiCancel, LocalAiRunView, LocalAiServerView, NodeCard, NodeEvent } from '../../shared/types.ts';
import type { ClusterLink } from '../cluster/join.ts';
import type { ClusterSettings } from '../cluster/cluster-settings.ts';
import type { Invitations } from '../cluster/invitations.ts';
import { Converger } from './rollouts/converge.ts';
import { DEFAULT_HEARTBEAT_MS } from '../cluster/defaults.ts';
import { DesiredState } from './rollouts/desired.ts';
import { askOffers, checkOffered } from './rollouts/offers.ts';
import { Rollouts } from './rollouts/rollouts.ts';
import { HOME, homeStores, migrateRollouts, type Stores } from '../cluster/store/home-stores.ts';
import type { LocalNodeApi } from '../core/local-node-api.ts';
import type { LocalAiConnection } from '../localai/connection.ts';
import type { NodeProvider } from './provider.ts';
import { localProvider } from './providers/local.ts';
import { workerProvider } from './providers/localai-workers.ts';
import { memberProvider } from './providers/members.ts';
import { cardsOf, routeTo } from './router.ts';
import { activeRefusal, isActive } from '../cluster/store/bodies.ts';

export interface LocalAiServerSettings {
  view(): LocalAiServerView;
  update(next: LocalAiServerRequest | null): Promise<LocalAiServerView>;
}

/** LocalAI run by this host, as the `localai…` calls reach it. */
export interface LocalAiRunnerControl {
  view(): LocalAiRunView;
  control(action: LocalAiAction): Promise<LocalAiRunView>;
  install(version?: string, as?: 'install' | 'upgrade'): Promise<LocalAiRunView>;
  rollback(): Promise<LocalAiRunView>;
  cancel(): Promise<LocalAiCancel>;
  logLines(count?: number): string[];
  latest(): Promise<string>;
}

export interface HostOptions {
  node: LocalNodeApi;
  cluster: ClusterLink | null;
  /** The LocalAI cluster whose workers this host manages as nodes of their own kind. */
  localai?: LocalAiConnection | null;
  /** The LocalAI server beside this host's node, as Settings show and change it. */
  localaiServer?: LocalAiServerSettings | null;
  /** LocalAI run by this host (`hangar localai`). */
  localaiRunner?: LocalAiRunnerControl | null;
  /** Where a host in no cluster keeps its rollouts and desired versions (and whence they move into a cluster's). */
  stateDir: string;
  /** The cluster to join, as Settings show and change it. */
  clusterSettings: ClusterSettings;
  /** Invitations made and redeemed on this host's home (absent: Settings offer none). */
  invitations?: Invitations | null;
}

const NO_SERVER = 'This host links no LocalAI server.';
const NO_RUNNER = 'This host does not run LocalAI.';
const NO_INVITATIONS = 'This host makes and redeems no invitations.';

export type Host = HangarApi & {
  /** Someone watches the cluster through this host (a window, a connected client) until the returned function is called. */
  watch(): () => void;
  on(event: 'event', listener: (e: NodeEvent) => void): unknown;
  off(event: 'event', listener: (e: NodeEvent) => void): unknown;
  close(): Promise<void>;
};

/**
 * What the UI and the CLI talk to: every kind of node through its provider (this machine's node as `local`, the
 * cluster's other members by id over NATS, LocalAI workers), their events merged into one stream, and rollouts and
 * desired versions across them.
 */
export function createHost(options: HostOptions): Host {
  const { node, cluster } = options;
  const events = new EventEmitter<{ event: [NodeEvent] }>();
  const emit = (event: NodeEvent) => events.emit('event', event);
  const localai = options.localai ?? null;
  let converger: Converger | null = null;
  const local = localProvider(node, cluster, () => converger?.drift() ?? 0);
  const members = cluster ? memberProvider(cluster) : null;
  // Listed in this order: this machine, the cluster's members, then the LocalAI workers.
  const providers: NodeProvider[] = [local, ...(members ? [members] : []), ...(localai ? [workerProvider(localai)] : [])];
  for (const provider of providers) provider.onEvent(emit);
  // A swap on a Hangar node that shares its backends directory with a LocalAI worker concerns that worker too.
  events.on('event', (event) => localai?.link()?.hangarEvent(event));
  const runner = (req: NodeRef): LocalAiRunnerControl => {
    checkHost(req);
    if (!options.localaiRunner) throw new HangarError('conflict', NO_RUNNER);
    return options.localaiRunner;
  };
  const api = routeTo(providers, members ?? local);
  const invitations = (req: NodeRef): Invitations => {
    checkHost(req);
    if (!options.invitations) throw new HangarError('conflict', NO_INVITATIONS);
    return options.invitations;
  };

  const stores = cluster?.stores ?? homeStores(options.stateDir);
  const desired = new DesiredState({
    records: stores.desired,
    status: stores.status,
    writer: cluster?.id ?? HOME.id,
    store: () => stores.view(),
    emit,
    nameOf: (id) => cluster?.nameOfKey(id) ?? null,
    forgotten: (id) => cluster?.presence?.forgotten(id) ?? false,
  });
  // A host in no cluster is a cluster of one: its own node follows the desired versions kept in its home. In a cluster,
  // a member follows the cluster's; a viewer-only host has no node there.
  const member = cluster?.member ?? null;
  converger = cluster && !member
    ? null
    : new Converger({
        node,
        id: cluster?.id ?? LOCAL_NODE,
        ...stores,
        trusts: cluster ? (signer) => cluster.signerTrusted(signer) : async () => true,
        stateDir: options.stateDir,
        heartbeatMs: cluster?.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
        onDrift: () => member?.refreshSoon(),
      });
  if (converger) cluster?.followDrift(() => converger?.drift() ?? 0);
  void converger?.start();
  const nodes = (): Promise<NodeCard[]> => cardsOf(providers);
  // A LocalAI worker on a Hangar node's machine and backends directory is rolled out as that node.
  const rolledOut = async () => (await nodes()).filter((card) => !card.localai?.pairedWith);
  // A viewer-only host's own machine is no member: rollouts and pins go to the cluster's nodes.
  const targets = async () => (cluster ? (await rolledOut()).filter((c) => c.id !== LOCAL_NODE) : rolledOut());
  const rollouts = new Rollouts({
    api,
    nodes: targets,
    records: stores.rollouts,
    desired,
    emit,
    self: cluster ? { id: cluster.id, name: cluster.name } : { id: LOCAL_NODE, name: 'this host' },
    heartbeatMs: cluster?.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    writes: cluster?.role !== 'node',
  });
  events.on('event', (event) => {
    if (event.type === 'cluster-status') rollouts.setLinked(event.status.link.connected);
  });
  if (cluster && cluster.role !== 'node') void moveHomeRollouts(stores, options.stateDir);
  /** Writing the cluster's state is a viewer's: a node-only host's credentials may not. */
  const checkWriter = (req: NodeRef) => {
    checkHost(req);
    if (cluster?.role === 'node') throw new HangarError('forbidden', 'this host joined the cluster as a node only (--cluster-role node): pins and rollouts are a viewer\'s');
    // Refused for good, the store would only time out: why is known now.
    const link = cluster?.status().link;
    if (link?.reason === REVOKED) throw new HangarError('failed', `the cluster cannot be reached: ${REVOKED}`);
  };

  return {
    ...api,
    nodes: async (req) => {
      checkHost(req);
      return nodes();
    },
    rollout: async (req) => {
      checkWriter(req);
      return rollouts.start(req.name, { maxParallel: req.maxParallel ?? 1, on: req.on, version: req.version });
    },
    rollouts: async (req) => {
      checkHost(req);
      return rollouts.list();
    },
    resumeRollout: async (req) => {
      checkWriter(req);
      return rollouts.resume(req.id);
    },
    pin: async (req) => {
      checkWriter(req);
      const running = (await rollouts.list()).find((r) => r.backend === req.name && isActive(r));
      if (running) throw activeRefusal(running);
      const selector = parseSelector(req.on);
      checkOffered(await askOffers(api, (await targets()).filter((m) => selects(selector, m)), req.name), req.name, req.version, req.on);
      return desired.pin({ backend: req.name, version: req.version, on: req.on, installMissing: true, rollout: null });
    },
    unpin: async (req) => {
      checkWriter(req);
      await desired.view();
      if (!desired.current(req.name)) throw new HangarError('not-found', `${req.name} has no desired version`);
      await desired.unpin(req.name);
    },
    desired: async (req) => {
      checkHost(req);
      return desired.view();
    },
    clusterSettings: async (req) => {
      checkHost(req);
      return options.clusterSettings.view();
    },
    updateClusterSettings: async (req) => {
      checkHost(req);
      return options.clusterSettings.update(req.cluster);
    },
    rollbackRollout: async (req) => {
      checkWriter(req);
      return rollouts.rollBack(req.id);
    },
    clusterInvitations: async (req) => {
      checkHost(req);
      return options.invitations?.view(cluster?.name ?? null) ?? { admin: false, member: null, restart: false };
    },
    clusterInvite: async ({ node, ...request }) => invitations({ node }).invite(request),
    clusterJoin: async (req) => {
      const home = invitations(req);
      if (cluster) throw new HangarError('conflict', `this host is in a cluster already, as ${cluster.name}: join from a host in none`);
      await home.join(req.token);
      return home.view(null);
    },
    clusterStatus: async (req) => {
      checkHost(req);
      return cluster?.status() ?? alone();
    },
    localaiSettings: async (req) => {
      checkHost(req);
      return localai?.view() ?? { localai: null, fixed: 'This host manages no LocalAI cluster.', status: null };
    },
    updateLocalaiSettings: async (req) => {
      checkHost(req);
      if (!localai) throw new HangarError('conflict', 'This host manages no LocalAI cluster.');
      return localai.update(req.localai);
    },
    localaiServer: async (req) => {
      checkHost(req);
      return options.localaiServer?.view() ?? { url: null, hasApiKey: false, insecure: false, fixed: NO_SERVER, status: null };
    },
    updateLocalaiServer: async (req) => {
      checkHost(req);
      if (!options.localaiServer) throw new HangarError('conflict', NO_SERVER);
      return options.localaiServer.update(req.server);
    },
    localaiRun: async (req) => runner(req).view(),
    localaiControl: async (req) => runner(req).control(req.action),
    localaiInstall: async (req) => runner(req).install(req.version, req.as),
    localaiRollback: async (req) => runner(req).rollback(),
    localaiCancel: async (req) => runner(req).cancel(),
    localaiLogs: async (req) => runner(req).logLines(req.lines),
    localaiLatest: async (req) => ({ latest: await runner(req).latest() }),
    watch: () => cluster?.presence?.watch() ?? (() => undefined),
    on: (event, listener) => events.on(event, listener),
    off: (event, listener) => events.off(event, listener),
    close: async () => {
      await rollouts.idle();
      rollouts.close();
      desired.close();
      await converger?.close();
      for (const provider of providers) await provider.close();
      if (!cluster) await stores.close();
    },
  };
}

/** Cluster operations are the host's own: they name `local`, the host the viewer talks to. */
function checkHost(req: NodeRef): void {
  if (req.node !== LOCAL_NODE) throw new HangarError('invalid-request', `cluster operations run on the host you talk to: name node "${LOCAL_NODE}", not ${req.node}`);
}

/** Rollouts an earlier Hangar kept in this home go into the cluster's store once it can be read. */
async function moveHomeRollouts(stores: Stores, stateDir: string): Promise<void> {
  await stores.rollouts.ready();
  if (!stores.view().available) return;
  const moved = await migrateRollouts(stateDir, stores.rollouts).catch(() => 0);
  if (moved > 0) process.stderr.write(`hangar: cluster: moved ${moved} rollout record${moved === 1 ? '' : 's'} from this home into the cluster's store\n`);
}

function alone(): ClusterStatusView {
  return {
    role: null, id: null, key: null, trusted: 0, openToAnyCaller: false, dropped: { cards: {}, events: {}, replies: {}, records: {} }, refused: {}, unsent: {}, violations: [],
    link: { connected: true, since: new Date().toISOString(), reason: null }, store: { available: true, reason: null }, untrusted: [],
  };
}
