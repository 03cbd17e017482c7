import { EventEmitter } from 'node:events';
import type { NodeMethod, NodeRef } from '../../../shared/api.ts';
import { HangarError } from '../../../shared/errors.ts';
import { nodeResultSchemas } from '../../../shared/result-schema.ts';
import type { JobView, NodeEvent } from '../../../shared/types.ts';
import type { ClusterLink } from '../../cluster/join.ts';
import { NodeUnreachable, RequestFailure } from '../../cluster/request-failure.ts';
import type { Envelope } from '../../core/invoke.ts';
import { cutOverlongTexts } from '../overlong-texts.ts';
import type { NodeProvider } from '../provider.ts';
import { unwrap } from './envelope.ts';

/** Calls that do real work on the node (spawning, loading, upgrading everything) get this much longer. */
const SLOW_METHODS: ReadonlySet<NodeMethod> = new Set(['load', 'respawn', 'respawnBackend', 'stop', 'upgradeAll', 'gallery', 'scan', 'installVersion', 'drain']);
const SLOW_FACTOR = 6;
const TERMINAL_JOB_STATES = new Set(['done', 'failed', 'cancelled']);

/** The cluster's other Hangar members, called over NATS. */
export function memberProvider(cluster: ClusterLink): NodeProvider {
  const events = new EventEmitter<{ event: [NodeEvent] }>();
  cluster.on('event', (event) => events.emit('event', event));
  return {
    kind: 'hangar-member',
    owns: (id) => cluster.presence?.has(id) ?? false,
    call: async (method, req) => {
      if (!cluster.presence) {
        throw new HangarError('forbidden', 'this host joined the cluster as a node only (--cluster-role node): it serves its own node and calls no other');
      }
      if (method === 'waitJob') return remoteWaitJob(cluster, req as NodeRef & { id: string }, events);
      return remoteCall(cluster, method, req);
    },
    cards: async () => {
      await cluster.presence?.look();
      return cluster.presence?.cards() ?? [];
    },
    onEvent: (listener) => events.on('event', listener),
    close: () => cluster.close(),
  };
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
 * periodic `jobs` call both backs them up and notices a node that stopped answering. A broker outage is waited out:
 * the job's end may have been told while it lasted, so the node is asked again as soon as the link is back.
 */
function remoteWaitJob(cluster: ClusterLink, req: NodeRef & { id: string }, events: EventEmitter<{ event: [NodeEvent] }>): Promise<JobView> {
  return new Promise<JobView>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    let linked = cluster.status().link.connected;
    let polling = false;
    let again = false;
    const settle = (finish: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      events.off('event', onEvent);
      finish();
    };
    const askNow = () => {
      clearTimeout(timer);
      if (polling) again = true;
      else void poll();
    };
    const onEvent = (event: NodeEvent) => {
      if (event.type === 'job' && event.node === req.node && event.job.id === req.id && TERMINAL_JOB_STATES.has(event.job.state)) {
        settle(() => resolve(event.job));
      } else if (event.type === 'cluster-status') {
        const back = event.status.link.connected && !linked;
        linked = event.status.link.connected;
        if (back) askNow();
      }
    };
    const poll = async () => {
      polling = true;
      try {
        const jobs = (await remoteCall(cluster, 'jobs', { node: req.node })) as JobView[];
        const job = jobs.find((j) => j.id === req.id);
        if (!job) return settle(() => reject(new HangarError('not-found', `no job ${req.id} on node ${labelOf(cluster, req.node)}`)));
        if (TERMINAL_JOB_STATES.has(job.state)) return settle(() => resolve(job));
        if (!settled) timer = setTimeout(() => void poll(), cluster.callTimeoutMs);
      } catch (error) {
        // Without the broker no node can answer: the link's return asks again.
        if (!(error instanceof NodeUnreachable && !linked)) settle(() => reject(error as Error));
      } finally {
        polling = false;
        if (again && !settled) {
          again = false;
          askNow();
        }
      }
    };
    events.on('event', onEvent);
    void poll();
  });
}

function labelOf(cluster: ClusterLink, id: string): string {
  return cluster.presence?.has(id) ? `${cluster.presence.card(id).name} (${id})` : id;
}

function formatSeconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}
