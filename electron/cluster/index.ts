import { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_HEARTBEAT_MS } from './defaults.ts';
import type { ClusterConnectOptions } from './connect.ts';
import { fixedClusterSettings, type ClusterSettings } from './cluster-settings.ts';
import { createHost, type Host } from './host.ts';
import { Member, type EventSource } from './member.ts';
import { ensureNodeId } from './node-id.ts';
import { Presence } from './presence.ts';

export { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_HEARTBEAT_MS } from './defaults.ts';
export type { Host } from './host.ts';
export { storedClusterSettings, type ClusterSettings } from './cluster-settings.ts';

export interface JoinOptions extends ClusterConnectOptions {
  heartbeatMs?: number | undefined;
  /** How long a call to another node may take before it counts as unanswered. */
  callTimeoutMs?: number | undefined;
}

export interface StartHostOptions {
  node: EventSource;
  home: string;
  stateDir: string;
  /** Absent: a host of this machine alone. */
  cluster?: JoinOptions | undefined;
  /** How Settings show and change the cluster (default: fixed to `cluster`, as for an agent). */
  clusterSettings?: ClusterSettings;
}

/** The host the UI and the CLI talk to; with `cluster`, this machine also joins the cluster as a member. */
export async function startHost(options: StartHostOptions): Promise<Host> {
  const clusterSettings = options.clusterSettings ?? fixedClusterSettings(options.cluster);
  if (!options.cluster) return createHost({ node: options.node, cluster: null, stateDir: options.stateDir, clusterSettings });
  const heartbeatMs = options.cluster.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const id = await ensureNodeId(options.home);
  // The NATS client is loaded only by a host that joins a cluster.
  const { connectCluster } = await import('./connect.ts');
  const { natsRequester } = await import('./request.ts');
  const nc = await connectCluster(options.cluster);
  const presence = new Presence(nc, id, Math.max(10, Math.min(250, Math.floor(heartbeatMs / 4))));
  const member = new Member({ nc, node: options.node, id, name: options.cluster.name, heartbeatMs });
  // Listening first, so this node's own first heartbeat already lands in its table.
  presence.start();
  const host = createHost({
    node: options.node,
    cluster: { nc, member, presence, callTimeoutMs: options.cluster.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS, request: await natsRequester(nc) },
    stateDir: options.stateDir,
    clusterSettings,
  });
  await member.start();
  return host;
}
