import type { NodeMethod, NodeRef } from '../../../shared/api.ts';
import { HangarError } from '../../../shared/errors.ts';
import { nodeResultSchemas } from '../../../shared/result-schema.ts';
import type { ClusterLink } from '../../cluster/join.ts';
import { NodeUnreachable, RequestFailure } from '../../cluster/request-failure.ts';
import type { Envelope } from '../../core/invoke.ts';
import { cutOverlongTexts } from '../overlong-texts.ts';
import { unwrap } from './envelope.ts';

/** Calls that do real work on the node (spawning, loading, upgrading everything) get this much longer. */
const SLOW_METHODS: ReadonlySet<NodeMethod> = new Set(['load', 'respawn', 'respawnBackend', 'stop', 'upgradeAll', 'gallery', 'scan', 'installVersion', 'drain']);
const SLOW_FACTOR = 6;

/** One call to another member over NATS, its reply held to the method's schema. */
export async function remoteCall(cluster: ClusterLink, method: NodeMethod, req: NodeRef): Promise<unknown> {
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

export function labelOf(cluster: ClusterLink, id: string): string {
  return cluster.presence?.has(id) ? `${cluster.presence.card(id).name} (${id})` : id;
}

function formatSeconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}
