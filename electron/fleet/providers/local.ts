import { hostname } from 'node:os';
import { LOCAL_NODE, type NodeMethod, type NodeRef } from '../../../shared/api.ts';
import type { NodeCard, NodeEvent } from '../../../shared/types.ts';
import type { ClusterLink } from '../../cluster/join.ts';
import type { LocalNodeApi } from '../../core/local-node-api.ts';
import type { NodeProvider } from '../provider.ts';
import { unwrap } from './envelope.ts';

/**
 * This machine's node: `local`, and its id in the cluster. In a cluster its calls by id go through the member that
 * serves it there, as another viewer's would.
 */
export function localProvider(node: LocalNodeApi, cluster: ClusterLink | null, drift: () => number): NodeProvider {
  const member = cluster?.member ?? null;
  const listeners: Array<(event: NodeEvent) => void> = [];
  return {
    kind: 'local',
    owns: (id) => id === LOCAL_NODE || (member !== null && id === cluster?.id),
    call: async (method: NodeMethod, req: NodeRef) => {
      if (member && cluster && req.node === cluster.id) return unwrap(await member.serve(method, req));
      return (node[method] as (r: unknown) => Promise<unknown>).call(node, req);
    },
    // Listed by the cluster's presence once it hears its own card; a node-only host hears none, and a viewer-only
    // host's machine is no member, so it is listed here all the same.
    cards: async () => {
      if (cluster?.presence?.cards().some((c) => c.self)) return [];
      return [member?.card() ?? { ...(await localCard(node, drift())), ...(cluster && { viewerOnly: true as const }) }];
    },
    onEvent: (listener) => {
      listeners.push(listener);
      node.on('event', listener);
    },
    // The node outlives its host (a desktop app leaving a cluster keeps its backends): only the listeners go.
    close: async () => {
      for (const listener of listeners.splice(0)) node.off('event', listener);
    },
  };
}

/** A host in no cluster is a cluster of one. */
async function localCard(node: LocalNodeApi, drift: number): Promise<NodeCard> {
  const ref = { node: LOCAL_NODE };
  const [info, counts, settings, machine] = await Promise.all([node.info(ref), node.counts(), node.settings(ref), node.resources(ref).catch(() => null)]);
  const { processes: _processes, ...resources } = machine ?? { processes: null };
  return {
    id: LOCAL_NODE, name: info.name, self: true, status: 'online', reason: null, host: hostname(), platform: info.platform, arch: info.arch,
    capability: info.capability, version: info.version, counts: { ...counts, drift }, heartbeatMs: 0, lastSeen: new Date().toISOString(), access: 'self',
    labels: settings.settings.labels, cordoned: settings.settings.cordoned, resources: machine ? (resources as NodeCard['resources']) : null,
  };
}
