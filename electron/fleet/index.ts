import { LOCAL_NODE, type LocalAiJoinRequest } from '../../shared/api.ts';
import type { ClusterRole } from '../../shared/types.ts';
import { LocalAiConnection } from '../localai/connection.ts';
import type { HangarNodes } from '../localai/link.ts';
import { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_HEARTBEAT_MS } from '../cluster/defaults.ts';
import type { ClusterConnectOptions } from '../nats/connect.ts';
import { fixedClusterSettings, type ClusterSettings } from '../cluster/cluster-settings.ts';
import { createHost, type Host, type LocalAiRunnerControl, type LocalAiServerSettings } from './host.ts';
import type { EventSource } from '../cluster/member.ts';

export { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_HEARTBEAT_MS } from '../cluster/defaults.ts';
export type { Host } from './host.ts';
export { storedClusterSettings, type ClusterSettings } from '../cluster/cluster-settings.ts';

export interface JoinOptions extends ClusterConnectOptions {
  /** node: serve this machine's node only; viewer: watch and call the nodes only; default both. */
  role?: ClusterRole | undefined;
  /** Act on every call, signed or not (--insecure-any-caller). */
  anyCaller?: boolean | undefined;
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
  /** The LocalAI cluster whose workers the host manages: fixed by the command line, else kept in `stateDir`. */
  localai?: LocalAiHostOptions;
  /** The LocalAI server beside the node (the node's co-runner), as Settings show and change it. */
  localaiServer?: LocalAiServerSettings;
  /** LocalAI run by the host. */
  localaiRunner?: LocalAiRunnerControl;
}

export interface LocalAiHostOptions {
  fixed: LocalAiJoinRequest | null;
  pollMs?: number | undefined;
  reloadWaitMs?: number | undefined;
}

/** The host the UI and the CLI talk to; with `cluster`, this machine also joins the cluster. */
export async function startHost(options: StartHostOptions): Promise<Host> {
  const clusterSettings = options.clusterSettings ?? fixedClusterSettings(options.cluster);
  // The LocalAI link pairs workers with the Hangar nodes this host sees; it asks only once the host exists.
  const hangar: HangarNodes = {
    cards: () => host.nodes({ node: LOCAL_NODE }),
    info: (id) => host.info({ node: id }),
    backends: (id) => host.backends({ node: id }),
  };
  const localai = new LocalAiConnection({
    stateDir: options.stateDir,
    fixed: options.localai?.fixed ?? null,
    hangar,
    ...(options.localai?.pollMs !== undefined && { pollMs: options.localai.pollMs }),
    ...(options.localai?.reloadWaitMs !== undefined && { reloadWaitMs: options.localai.reloadWaitMs }),
  });
  const host = await createClusterHost(options, clusterSettings, localai);
  await localai.start();
  return host;
}

async function createClusterHost(options: StartHostOptions, clusterSettings: ClusterSettings, localai: LocalAiConnection): Promise<Host> {
  if (!options.cluster) return createHost({ node: options.node, cluster: null, stateDir: options.stateDir, clusterSettings, localai, localaiServer: options.localaiServer ?? null, localaiRunner: options.localaiRunner ?? null });
  // The NATS client is loaded only by a host that joins a cluster.
  const { joinCluster } = await import('../cluster/join.ts');
  const cluster = await joinCluster({
    ...options.cluster,
    node: options.node,
    home: options.home,
    role: options.cluster.role ?? 'node+viewer',
    anyCaller: options.cluster.anyCaller === true,
    heartbeatMs: options.cluster.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    callTimeoutMs: options.cluster.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
  });
  return createHost({ node: options.node, cluster, stateDir: options.stateDir, clusterSettings, localai, localaiServer: options.localaiServer ?? null, localaiRunner: options.localaiRunner ?? null });
}
