import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { LOCAL_NODE, nodeMethods, type HangarApi, type LocalAiServerRequest, type NodeApi, type NodeMethod, type NodeRef } from '../../shared/api.ts';
import { HangarError, isErrorEnvelope } from '../../shared/errors.ts';
import { nodeResultSchemas } from '../../shared/result-schema.ts';
import { cutOverlongTexts } from './overlong-texts.ts';
import { parseSelector, selects } from '../../shared/selector.ts';
import type { ClusterStatusView, JobView, LocalAiServerView, NodeCard, NodeEvent } from '../../shared/types.ts';
import type { ClusterLink } from '../cluster/join.ts';
import type { Envelope } from '../core/invoke.ts';
import type { ClusterSettings } from '../cluster/cluster-settings.ts';
import { Converger } from '../cluster/converge.ts';
import { DEFAULT_HEARTBEAT_MS } from '../cluster/defaults.ts';
import { DesiredState } from '../cluster/desired.ts';
import type { EventSource } from '../cluster/member.ts';
import { askOffers, checkOffered } from '../cluster/offers.ts';
import { Rollouts } from '../cluster/rollouts.ts';
import { NodeUnreachable, RequestFailure } from '../cluster/request-failure.ts';
import { HOME, homeStores, migrateRollouts, type Stores } from '../cluster/store/home-stores.ts';
import type { LocalAiConnection } from '../localai/connection.ts';
import type { LocalAiLink } from '../localai/link.ts';

export interface LocalAiServerSettings {
  view(): LocalAiServerView;
  update(next: LocalAiServerRequest | null): Promise<LocalAiServerView>;
}

export interface HostOptions {
  node: EventSource;
  cluster: ClusterLink | null;
  /** The LocalAI cluster whose workers this host manages as nodes of their own kind. */
  localai?: LocalAiConnection | null;
  /** The LocalAI server beside this host's node, as Settings show and change it. */
  localaiServer?: LocalAiServerSettings | null;
  /** Where a host in no cluster keeps its rollouts and desired versions (and whence they move into a cluster's). */
  stateDir: string;
  /** The cluster to join, as Settings show and change it. */
  clusterSettings: ClusterSettings;
}

/** Calls that do real work on the node (spawning, loading, upgrading everything) get this much longer. */
const SLOW_METHODS: ReadonlySet<NodeMethod> = new Set(['load', 'respawn', 'respawnBackend', 'stop', 'upgradeAll', 'gallery', 'scan', 'installVersion', 'drain']);
const SLOW_FACTOR = 6;
const NO_SERVER = 'This host links no LocalAI server.';
const TERMINAL_JOB_STATES = new Set(['done', 'failed', 'cancelled']);

export type Host = HangarApi & {
  /** Someone watches the cluster through this host (a window, a connected client) until the returned function is called. */
  watch(): () => void;
  on(event: 'event', listener: (e: NodeEvent) => void): unknown;
  off(event: 'event', listener: (e: NodeEvent) => void): unknown;
  close(): Promise<void>;
};

/**
 * What the UI and the CLI talk to: this machine's node as `local`, every other member by its id over NATS, the
 * members' events merged into one stream, and rollouts across them.
 */
export function createHost(options: HostOptions): Host {
  const { node, cluster } = options;
  const events = new EventEmitter<{ event: [NodeEvent] }>();
  const emit = (event: NodeEvent) => events.emit('event', event);
  node.on('event', emit);
  cluster?.on('event', emit);
  const localai = options.localai ?? null;
  localai?.on('event', emit);
  // A swap on a Hangar node that shares its backends directory with a LocalAI worker concerns that worker too.
  events.on('event', (event) => localai?.link()?.hangarEvent(event));

  const route = async (method: NodeMethod, req: NodeRef): Promise<unknown> => {
    const workers = localai?.link();
    if (workers?.has(req.node)) return workers.call(method, req);
    if (!cluster || req.node === LOCAL_NODE) return (node[method] as (r: unknown) => Promise<unknown>).call(node, req);
    if (cluster.member && req.node === cluster.id) return unwrap(await cluster.member.serve(method, req));
    if (!cluster.presence) {
      throw new HangarError('forbidden', 'this host joined the cluster as a node only (--cluster-role node): it serves its own node and calls no other');
    }
    if (method === 'waitJob') return remoteWaitJob(cluster, req as NodeRef & { id: string }, events);
    return remoteCall(cluster, method, req);
  };
  const api = Object.fromEntries(nodeMethods.map((method) => [method, (req: NodeRef) => route(method, req)])) as unknown as NodeApi;

  const stores = cluster?.stores ?? homeStores(options.stateDir);
  const desired = new DesiredState({ records: stores.desired, status: stores.status, writer: cluster?.id ?? HOME.id, store: () => stores.view(), emit });
  // A host in no cluster is a cluster of one: its own node follows the desired versions kept in its home.
  const converger = cluster
    ? null
    : new Converger({ node, id: LOCAL_NODE, ...stores, trusts: async () => true, stateDir: options.stateDir, onDrift: () => undefined });
  void converger?.start();
  const nodes = async (): Promise<NodeCard[]> => {
    await cluster?.presence?.look();
    const cards = cluster?.presence?.cards() ?? [];
    // A node-only host hears no cards, and a viewer-only one is no member: this machine is listed all the same.
    if (!cards.some((c) => c.self)) cards.unshift(cluster?.member?.card() ?? { ...(await localCard(node, converger?.drift() ?? 0)), ...(cluster && { viewerOnly: true as const }) });
    return withWorkers(cards, localai?.link() ?? null);
  };
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
  cluster?.on('event', (event) => {
    if (event.type === 'cluster-status') rollouts.setLinked(event.status.link.connected);
  });
  if (cluster && cluster.role !== 'node') void moveHomeRollouts(stores, options.stateDir);
  /** Writing the cluster's state is a viewer's: a node-only host's credentials may not. */
  const checkWriter = (req: NodeRef) => {
    checkHost(req);
    if (cluster?.role === 'node') throw new HangarError('forbidden', 'this host joined the cluster as a node only (--cluster-role node): pins and rollouts are a viewer\'s');
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
      const running = (await rollouts.list()).find((r) => r.backend === req.name && (r.state === 'running' || r.state === 'rolling-back' || r.state === 'interrupted'));
      if (running) throw new HangarError('conflict', `rollout ${running.id} of ${req.name} is ${running.state}: it must end (resume it or roll it back) first`);
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
      return options.localaiServer?.view() ?? { url: null, hasApiKey: false, fixed: NO_SERVER, status: null };
    },
    updateLocalaiServer: async (req) => {
      checkHost(req);
      if (!options.localaiServer) throw new HangarError('conflict', NO_SERVER);
      return options.localaiServer.update(req.server);
    },
    watch: () => cluster?.presence?.watch() ?? (() => undefined),
    on: (event, listener) => events.on(event, listener),
    off: (event, listener) => events.off(event, listener),
    close: async () => {
      node.off('event', emit);
      await rollouts.idle();
      rollouts.close();
      desired.close();
      await converger?.close();
      await localai?.close();
      await cluster?.close();
      if (!cluster) await stores.close();
    },
  };
}

/** The LocalAI workers after the Hangar nodes; a Hangar node on a worker's machine and directory names it. */
function withWorkers(cards: NodeCard[], workers: LocalAiLink | null): NodeCard[] {
  if (!workers) return cards;
  const own = cards.map((card) => {
    const worker = workers.pairOf(card.id);
    return worker ? { ...card, pairedWorker: worker } : card;
  });
  return [...own, ...workers.cards()];
}

/** Cluster operations are the host's own: they name `local`, the host the viewer talks to. */
function checkHost(req: NodeRef): void {
  if (req.node !== LOCAL_NODE) throw new HangarError('invalid-request', `cluster operations run on the host you talk to: name node "${LOCAL_NODE}", not ${req.node}`);
}

async function remoteCall(cluster: ClusterLink, method: NodeMethod, req: NodeRef): Promise<unknown> {
  await cluster.presence?.look();
  if (!cluster.presence?.has(req.node)) throw new HangarError('not-found', `no node ${req.node} in the cluster`);
  const label = labelOf(cluster, req.node);
  if (cluster.presence.card(req.node).status === 'unknown') throw new NodeUnreachable(`node ${label} is unknown (no broker): this host lost its cluster connection`);
  const timeoutMs = SLOW_METHODS.has(method) ? cluster.callTimeoutMs * SLOW_FACTOR : cluster.callTimeoutMs;
  let reply: string;
  try {
    reply = await cluster.request(req.node, JSON.stringify({ method, params: req }), timeoutMs);
  } catch (error) {
    if (error instanceof RequestFailure && error.reason === 'timeout') throw new NodeUnreachable(`node ${label} did not answer within ${formatSeconds(timeoutMs)} s`);
    if (error instanceof RequestFailure && error.reason === 'no-responders') throw new NodeUnreachable(`node ${label} is not connected to the cluster`);
    if (error instanceof RequestFailure && error.reason === 'refused') throw new HangarError('forbidden', `the NATS server refused this host's call to node ${label}: ${error.message}`);
    throw new NodeUnreachable(`cannot reach node ${label}: ${(error as Error).message}`);
  }
  let envelope: unknown;
  try {
    envelope = JSON.parse(reply);
  } catch {
    throw new HangarError('failed', `node ${label} sent a malformed reply`);
  }
  const value = unwrap(envelope as Envelope);
  let result = nodeResultSchemas[method].safeParse(value);
  const cut = result.success ? null : cutOverlongTexts(value, result.error.issues);
  if (cut !== null) result = nodeResultSchemas[method].safeParse(cut);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new HangarError('failed', `node ${label} sent a reply that is not what ${method} returns (${issue?.path.join('.') || 'the value'}: ${issue?.message ?? 'wrong shape'})`);
  }
  return result.data;
}

/**
 * Waits for a job on another node without one long request: the job's events usually end the wait, and a
 * periodic `jobs` call both backs them up and notices a node that stopped answering.
 */
function remoteWaitJob(cluster: ClusterLink, req: NodeRef & { id: string }, events: EventEmitter<{ event: [NodeEvent] }>): Promise<JobView> {
  return new Promise<JobView>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const settle = (finish: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      events.off('event', onEvent);
      finish();
    };
    const onEvent = (event: NodeEvent) => {
      if (event.type === 'job' && event.node === req.node && event.job.id === req.id && TERMINAL_JOB_STATES.has(event.job.state)) {
        settle(() => resolve(event.job));
      }
    };
    const poll = async () => {
      try {
        const jobs = (await remoteCall(cluster, 'jobs', { node: req.node })) as JobView[];
        const job = jobs.find((j) => j.id === req.id);
        if (!job) return settle(() => reject(new HangarError('not-found', `no job ${req.id} on node ${labelOf(cluster, req.node)}`)));
        if (TERMINAL_JOB_STATES.has(job.state)) return settle(() => resolve(job));
        if (!settled) timer = setTimeout(() => void poll(), cluster.callTimeoutMs);
      } catch (error) {
        settle(() => reject(error as Error));
      }
    };
    events.on('event', onEvent);
    void poll();
  });
}

function unwrap(envelope: Envelope): unknown {
  if (envelope?.ok === true) return envelope.value;
  if (envelope?.ok === false && isErrorEnvelope(envelope.error)) throw new HangarError(envelope.error.code, envelope.error.message);
  throw new HangarError('failed', 'a node sent a malformed reply');
}

function labelOf(cluster: ClusterLink, id: string): string {
  return cluster.presence?.has(id) ? `${cluster.presence.card(id).name} (${id})` : id;
}

function formatSeconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}

/** A host in no cluster is a cluster of one. */
async function localCard(node: EventSource, drift: number): Promise<NodeCard> {
  const ref = { node: LOCAL_NODE };
  const [info, counts, settings, machine] = await Promise.all([node.info(ref), node.counts(), node.settings(ref), node.resources(ref).catch(() => null)]);
  const { processes: _processes, ...resources } = machine ?? { processes: null };
  return {
    id: LOCAL_NODE, name: info.name, self: true, status: 'online', reason: null, host: hostname(), platform: info.platform, arch: info.arch,
    capability: info.capability, version: info.version, counts: { ...counts, drift }, heartbeatMs: 0, lastSeen: new Date().toISOString(), access: 'self',
    labels: settings.settings.labels, cordoned: settings.settings.cordoned, resources: machine ? (resources as NodeCard['resources']) : null,
  };
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
