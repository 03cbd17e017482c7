import { join } from 'node:path';
import { LOCAL_NODE, type LocalAiJoinRequest } from '../../shared/api.ts';
import type { ClusterRole } from '../../shared/types.ts';
import { LocalAiConnection } from '../localai/connection.ts';
import type { HangarNodes } from '../localai/workers-link.ts';
import { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_HEARTBEAT_MS } from '../cluster/defaults.ts';
import type { ClusterConnectOptions } from '../nats/connect.ts';
import { fixedClusterSettings, type ClusterSettings } from '../cluster/cluster-settings.ts';
import { homeInvitations } from '../cluster/invitations.ts';
import type { LocalNodeApi } from '../core/local-node-api.ts';
import { LocalNode } from '../core/node.ts';
import type { LocalNodeOptions } from '../core/node/index.ts';
import { linkRunLocalAi } from '../localai/runner/link-server.ts';
import { BackendMarks } from '../localai/runner/backend-marks.ts';
import { LocalAiRunner, type LocalAiRunnerOptions } from '../localai/runner/runner.ts';
import { LocalAiServer, type LocalAiServerOptions } from '../localai/server/server.ts';
import { createHost, type Host, type LocalAiRunnerControl, type LocalAiServerSettings } from './host.ts';
import { followMarks, markCheck } from './localai-marks.ts';

export { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_HEARTBEAT_MS } from '../cluster/defaults.ts';
export type { Host } from './host.ts';
export { storedClusterSettings, type ClusterSettings } from '../cluster/cluster-settings.ts';
export { joinedConnection } from '../cluster/joined-home.ts';

export interface JoinOptions extends ClusterConnectOptions {
  /** node: serve this machine's node only; viewer: watch and call the nodes only; default both. */
  role?: ClusterRole | undefined;
  /** How the role was given, in words a refusal names (`--cluster-role viewer`, the invitation's role). */
  roleFrom?: string | undefined;
  /** Act on every call, signed or not (--insecure-any-caller). */
  anyCaller?: boolean | undefined;
  heartbeatMs?: number | undefined;
  /** How long a call to another node may take before it counts as unanswered. */
  callTimeoutMs?: number | undefined;
  /** An admin viewer's --cluster-sweep: remove stored values it does not take once this old. */
  sweepAfterMs?: number | undefined;
  /** A machine that joined by invitation: the admins whose grants it takes. */
  grantors?: string[] | undefined;
}

export interface NodeSetup extends Omit<LocalNodeOptions, 'coRunner'> {
  /** The LocalAI server beside the node: fixed by the command line, else linked in Settings. */
  localaiServer?: Pick<LocalAiServerOptions, 'fixed' | 'pollMs' | 'loadTimeoutMs' | 'insecure'> | undefined;
  /** LocalAI run by Hangar: where its binary and releases come from, its models, its limits. */
  localaiRun?: Omit<LocalAiRunnerOptions, 'home' | 'backendsPath' | 'onReady' | 'marks'> | undefined;
}

export interface StartedNode {
  node: LocalNode;
  /** The LocalAI server beside the node: the node's co-runner, so every swap keeps its models on the live tree. */
  localaiServer: LocalAiServer;
  /** LocalAI run by Hangar, linked as that server once it is ready (a LocalAI run by hand or in Docker is linked in Settings). */
  localaiRunner: LocalAiRunner;
  /** What the start recovered, a line each. */
  recovered: string[];
}

/** This machine's node with LocalAI beside it, made here for both the desktop app and the agent. */
export async function startNode(setup: NodeSetup): Promise<StartedNode> {
  const { localaiServer: server, localaiRun, ...options } = setup;
  // The backends LocalAI's gallery marks once LocalAI's version changed, said beside a load of a model on one that fails.
  const marks = new BackendMarks(join(options.home, 'state', 'localai-backend-marks.json'));
  await marks.load();
  const localaiServer = new LocalAiServer({ stateDir: join(options.home, 'state'), fixed: null, ...server, loadNote: (...backends) => marks.loadNote(...backends) });
  const node = new LocalNode({ ...options, coRunner: localaiServer });
  const localaiRunner = new LocalAiRunner({
    ...localaiRun,
    home: options.home,
    backendsPath: node.backendsDir,
    onReady: (running) => linkRunLocalAi(localaiServer, running),
    onModelsLoaded: () => localaiServer.readFresh(),
    marks: { store: marks, check: markCheck(node) },
  });
  // Before the node starts its link: a LocalAI a killed agent left running is stopped first, never linked.
  await localaiRunner.load();
  const recovered = await node.start();
  followMarks(node, marks, (line) => process.stderr.write(`hangar: ${line}\n`));
  return { node, localaiServer, localaiRunner, recovered };
}

export interface StartHostOptions {
  node: LocalNodeApi;
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
  const host = await createJoinedHost(options, clusterSettings, localai);
  await localai.start();
  return host;
}

async function createJoinedHost(options: StartHostOptions, clusterSettings: ClusterSettings, localai: LocalAiConnection): Promise<Host> {
  const hostOptions = {
    node: options.node, stateDir: options.stateDir, clusterSettings, localai, localaiServer: options.localaiServer ?? null, localaiRunner: options.localaiRunner ?? null,
    invitations: homeInvitations(options.home),
  };
  if (!options.cluster) return createHost({ ...hostOptions, cluster: null });
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
  return createHost({ ...hostOptions, cluster });
}
