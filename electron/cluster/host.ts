import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { LOCAL_NODE, nodeMethods, type HangarApi, type NodeApi, type NodeMethod, type NodeRef } from '../../shared/api.ts';
import { HangarError, isErrorEnvelope } from '../../shared/errors.ts';
import type { JobView, NodeCard, NodeEvent } from '../../shared/types.ts';
import type { Envelope } from '../core/invoke.ts';
import type { ClusterSettings } from './cluster-settings.ts';
import { countsOf } from './heartbeat.ts';
import type { EventSource, Member } from './member.ts';
import type { Presence } from './presence.ts';
import { Rollouts } from './rollouts.ts';
import { RequestFailure } from './request.ts';
import { EVENTS_ALL } from './subjects.ts';

export interface ClusterLink {
  nc: NatsConnection;
  member: Member;
  presence: Presence;
  /** How long a call to another node may take before it counts as unanswered. */
  callTimeoutMs: number;
  /** Sends one request to a node's call subject; rejects with `timeout` or `no-responders` as the reason. */
  request(id: string, data: string, timeoutMs: number): Promise<string>;
}

export interface HostOptions {
  node: EventSource;
  cluster: ClusterLink | null;
  /** Where rollouts are recorded. */
  stateDir: string;
  /** The cluster to join, as Settings show and change it. */
  clusterSettings: ClusterSettings;
}

/** Calls that do real work on the node (spawning, loading, upgrading everything) get this much longer. */
const SLOW_METHODS: ReadonlySet<NodeMethod> = new Set(['load', 'respawn', 'respawnBackend', 'stop', 'upgradeAll', 'gallery', 'scan']);
const SLOW_FACTOR = 6;
const TERMINAL_JOB_STATES = new Set(['done', 'failed', 'cancelled']);

export type Host = HangarApi & {
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

  let remoteEvents: Subscription | undefined;
  if (cluster) {
    cluster.presence.on('member', (member) => emit({ type: 'member', node: member.id, member }));
    remoteEvents = cluster.nc.subscribe(EVENTS_ALL, {
      callback: (error, msg) => {
        const id = msg.subject.split('.')[2];
        if (error || id === cluster.member.id) return;
        const event = parseEvent(msg.string(), id);
        if (event) emit(event);
      },
    });
  }

  const route = async (method: NodeMethod, req: NodeRef): Promise<unknown> => {
    if (!cluster || req.node === LOCAL_NODE) return (node[method] as (r: unknown) => Promise<unknown>).call(node, req);
    if (req.node === cluster.member.id) return unwrap(await cluster.member.serve(method, req));
    if (method === 'waitJob') return remoteWaitJob(cluster, req as NodeRef & { id: string }, events);
    return remoteCall(cluster, method, req);
  };
  const api = Object.fromEntries(nodeMethods.map((method) => [method, (req: NodeRef) => route(method, req)])) as unknown as NodeApi;

  const nodes = async (): Promise<NodeCard[]> => (cluster ? cluster.presence.cards() : [await localCard(node)]);
  const rollouts = new Rollouts({ api, nodes, stateDir: options.stateDir, emit });

  return {
    ...api,
    nodes: async (req) => {
      checkHost(req);
      return nodes();
    },
    rollout: async (req) => {
      checkHost(req);
      return rollouts.start(req.name, req.maxParallel ?? 1);
    },
    rollouts: async (req) => {
      checkHost(req);
      return rollouts.list();
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
      checkHost(req);
      return rollouts.rollBack(req.id);
    },
    on: (event, listener) => events.on(event, listener),
    off: (event, listener) => events.off(event, listener),
    close: async () => {
      node.off('event', emit);
      await rollouts.idle();
      if (!cluster) return;
      remoteEvents?.unsubscribe();
      cluster.presence.close();
      await cluster.member.close();
      await cluster.nc.close();
    },
  };
}

/** Cluster operations are the host's own: they name `local`, the host the viewer talks to. */
function checkHost(req: NodeRef): void {
  if (req.node !== LOCAL_NODE) throw new HangarError('invalid-request', `cluster operations run on the host you talk to: name node "${LOCAL_NODE}", not ${req.node}`);
}

async function remoteCall(cluster: ClusterLink, method: NodeMethod, req: NodeRef): Promise<unknown> {
  if (!cluster.presence.has(req.node)) throw new HangarError('not-found', `no node ${req.node} in the cluster`);
  const label = labelOf(cluster, req.node);
  const timeoutMs = SLOW_METHODS.has(method) ? cluster.callTimeoutMs * SLOW_FACTOR : cluster.callTimeoutMs;
  let reply: string;
  try {
    reply = await cluster.request(req.node, JSON.stringify({ method, params: req }), timeoutMs);
  } catch (error) {
    if (error instanceof RequestFailure && error.reason === 'timeout') {
      throw new HangarError('failed', `node ${label} did not answer within ${formatSeconds(timeoutMs)} s`);
    }
    if (error instanceof RequestFailure && error.reason === 'no-responders') throw new HangarError('failed', `node ${label} is not connected to the cluster`);
    throw new HangarError('failed', `cannot reach node ${label}: ${(error as Error).message}`);
  }
  let envelope: unknown;
  try {
    envelope = JSON.parse(reply);
  } catch {
    throw new HangarError('failed', `node ${label} sent a malformed reply`);
  }
  return unwrap(envelope as Envelope);
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
  return cluster.presence.has(id) ? `${cluster.presence.card(id).name} (${id})` : id;
}

function formatSeconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}

/** A remote event is taken only as that node's: its `node` must be the id in the subject it came on. */
function parseEvent(text: string, id: string | undefined): NodeEvent | null {
  try {
    const event = JSON.parse(text) as NodeEvent;
    return typeof event === 'object' && event !== null && typeof event.type === 'string' && event.node === id ? event : null;
  } catch {
    return null;
  }
}

/** A host in no cluster is a cluster of one. */
async function localCard(node: NodeApi): Promise<NodeCard> {
  const [info, backends] = await Promise.all([node.info({ node: LOCAL_NODE }), node.backends({ node: LOCAL_NODE })]);
  return {
    id: LOCAL_NODE, name: info.name, self: true, status: 'online', reason: null, host: hostname(), platform: info.platform, arch: info.arch,
    capability: info.capability, version: info.version, counts: countsOf(backends), heartbeatMs: 0, lastSeen: new Date().toISOString(),
  };
}
