import type {
  BackendView,
  ClusterInvitation,
  ClusterInvitationsView,
  ClusterSettingsView,
  ClusterStatusView,
  DesiredStateView,
  DesiredVersion,
  GalleryEntryView,
  InvitedRole,
  JobView,
  LoadResult,
  LocalAiAction,
  LocalAiCancel,
  LocalAiRunView,
  LocalAiServerView,
  LocalAiSettingsView,
  LogLine,
  NodeCard,
  NodeEvent,
  NodeInfo,
  ProcessView,
  NodeSettings,
  ResourcesView,
  RestartOptions,
  RolloutView,
  ScanEntry,
  SettingsView,
  UpgradeAllResult,
} from './types.ts';

// Every call names its node ("local" is this machine) so a cluster transport needs no new contract.
export interface NodeRef { node: string }
export interface BackendRef extends NodeRef { name: string }
export interface ModelRef extends NodeRef { model: string }
/**
 * A swap stops the processes Hangar supervises in the backend's directory. Processes it did not start are left
 * running (and named in the job's notice) unless the user opts in to stopping them too.
 */
export interface SwapOptions { stopUnsupervised?: boolean }
/**
 * An install, upgrade or rollback is gated on Health: the processes it stopped must come back from the new build, or,
 * when none ran, the new build is smoke-started once. `smokeStart: false` skips that for this job (default: the
 * node's `smokeStart` setting).
 */
export interface GatedSwapOptions extends SwapOptions { smokeStart?: boolean }
export type LeftoverAction = 'delete' | 'restore';

/** One interface for every host and transport: the core implements it, Electron IPC and WebSocket carry it. */
export interface NodeApi {
  info(req: NodeRef): Promise<NodeInfo>;
  gallery(req: NodeRef & { refresh?: boolean }): Promise<GalleryEntryView[]>;
  backends(req: NodeRef): Promise<BackendView[]>;
  processes(req: NodeRef): Promise<ProcessView[]>;
  jobs(req: NodeRef): Promise<JobView[]>;
  /** Jobs return at once; follow them with `job` events or `waitJob`. */
  install(req: BackendRef & GatedSwapOptions & { force?: boolean }): Promise<JobView>;
  upgrade(req: BackendRef & GatedSwapOptions): Promise<JobView>;
  upgradeAll(req: NodeRef): Promise<UpgradeAllResult[]>;
  /**
   * Installs, upgrades or downgrades `name` to exactly `version`, from the first gallery entry of that name whose
   * `version` is it, with the same health gate and rollback as an upgrade. Refused at once when no gallery of this
   * node offers that version ("2.0.0 wanted, not offered by this node's galleries").
   */
  installVersion(req: BackendRef & GatedSwapOptions & { version: string }): Promise<JobView>;
  rollback(req: BackendRef & GatedSwapOptions): Promise<JobView>;
  /** Picks which build of a meta backend this node installs (`capability` null: the automatic choice again). */
  chooseVariant(req: BackendRef & { capability: string | null }): Promise<GalleryEntryView>;
  delete(req: BackendRef & SwapOptions): Promise<JobView>;
  /**
   * A working directory LocalAI left behind (a `leftover` row): `delete` removes it, `restore` puts a backup of a
   * backend that is gone back in its place.
   */
  resolveLeftover(req: NodeRef & { name: string; action: LeftoverAction }): Promise<void>;
  waitJob(req: NodeRef & { id: string }): Promise<JobView>;
  cancelJob(req: NodeRef & { id: string }): Promise<JobView>;
  /** `restart`: what happens when the process ends by itself (default: kept, else on-failure); the delay and limit likewise. */
  load(req: NodeRef & { backend: string; model: string } & RestartOptions): Promise<LoadResult>;
  respawn(req: ModelRef): Promise<ProcessView>;
  /** Starts an exited or crashed model's process again and reloads its model (a live one is respawned). */
  restart(req: ModelRef): Promise<ProcessView>;
  respawnBackend(req: BackendRef): Promise<ProcessView[]>;
  stop(req: ModelRef): Promise<void>;
  /** Frees the model's memory (the backend's Free) and keeps its process running; Load loads it again. */
  unload(req: ModelRef): Promise<ProcessView>;
  /**
   * Stops one process a scan finds: a supervised one, or one Hangar did not start whose cwd is a replaced
   * (stale) directory of this node's backends. Any other pid is refused.
   */
  stopProcess(req: NodeRef & { pid: number }): Promise<void>;
  scan(req: NodeRef): Promise<ScanEntry[]>;
  logs(req: ModelRef): Promise<LogLine[]>;
  settings(req: NodeRef): Promise<SettingsView>;
  /**
   * Changes the given settings, applies them at once and keeps them; a fixed one is refused. A gallery at a location
   * the node does not read yet is first read and parsed as the node will read it, and refused when it cannot be,
   * unless `force`.
   */
  updateSettings(req: NodeRef & { settings: Partial<NodeSettings>; force?: boolean }): Promise<SettingsView>;
  /** CPU, memory, disk and GPUs now, and the GPU memory each supervised process holds. */
  resources(req: NodeRef): Promise<ResourcesView>;
  /** Cordons the node, then stops every process it supervises (Free, then stop); returns the models stopped. */
  drain(req: NodeRef): Promise<string[]>;
}

/**
 * What a host adds over its nodes: the cluster's members and rolling upgrades across them. `node` names the host
 * that answers (`local`); a host in no cluster lists only itself.
 */
export interface ClusterApi {
  nodes(req: NodeRef): Promise<NodeCard[]>;
  /**
   * Starts a rolling upgrade of `name` on the nodes `on` selects (default all) to `version` (default: the one their
   * galleries offer), and records it as the cluster's desired version; follow it with `rollout` events or `rollouts`.
   */
  rollout(req: BackendRef & { maxParallel?: number; on?: string; version?: string }): Promise<RolloutView>;
  /** Every rollout in the cluster (this host's own when it is in none), newest first. */
  rollouts(req: NodeRef): Promise<RolloutView[]>;
  /** Rolls back the nodes that rollout `id` upgraded. */
  rollbackRollout(req: NodeRef & { id: string }): Promise<RolloutView>;
  /** Takes over an interrupted rollout and goes on where it stopped; refused when another viewer already did. */
  resumeRollout(req: NodeRef & { id: string }): Promise<RolloutView>;
  /** Records `version` as the desired version of `name` on the nodes `on` selects: they install or move to it. */
  pin(req: BackendRef & { version: string; on: string }): Promise<DesiredVersion>;
  /** Clears the desired version of `name`: nodes keep what they run. */
  unpin(req: BackendRef): Promise<void>;
  /** The cluster's desired versions and how each node stands against them. */
  desired(req: NodeRef): Promise<DesiredStateView>;
  clusterSettings(req: NodeRef): Promise<ClusterSettingsView>;
  /**
   * Sets the cluster the host joins from its next start (null: none). A password or token left out is kept as it
   * is; an empty one is removed.
   */
  updateClusterSettings(req: NodeRef & { cluster: ClusterJoinRequest | null }): Promise<ClusterSettingsView>;
  /** Whether this host's home invites machines (it ran `hangar cluster init`), and the membership it holds. */
  clusterInvitations(req: NodeRef): Promise<ClusterInvitationsView>;
  /** On an admin's home: an invitation, as `hangar cluster invite` makes it; its command goes only to the caller. */
  clusterInvite(req: NodeRef & ClusterInviteRequest): Promise<ClusterInvitation>;
  /** Redeems an invitation for this host's home, as `HANGAR_JOIN_TOKEN=<token> hangar agent` does; the host joins when it next starts. */
  clusterJoin(req: NodeRef & { token: string }): Promise<ClusterInvitationsView>;
  /** The host's cluster link: its role and key, and what it dropped, refused or was refused. */
  clusterStatus(req: NodeRef): Promise<ClusterStatusView>;
  /** The LocalAI cluster whose workers this host manages, and how its link stands. */
  localaiSettings(req: NodeRef): Promise<LocalAiSettingsView>;
  /** The LocalAI server beside this host's node (sharing its backends directory), and how its link stands. */
  localaiServer(req: NodeRef): Promise<LocalAiServerView>;
  /** Links the LocalAI server at `url` (null: none) at once. An API key left out is kept as it is; an empty one is removed. */
  updateLocalaiServer(req: NodeRef & { server: LocalAiServerRequest | null }): Promise<LocalAiServerView>;
  /**
   * Sets the LocalAI cluster (null: none) and connects to it at once. A secret left out is kept as it is; an empty
   * one is removed.
   */
  updateLocalaiSettings(req: NodeRef & { localai: LocalAiJoinRequest | null }): Promise<LocalAiSettingsView>;
  /** LocalAI run by this host (`local-ai run` beside its node): where it stands. */
  localaiRun(req: NodeRef): Promise<LocalAiRunView>;
  /** Starts, stops or restarts it; a start answers once /readyz does (or it failed). */
  localaiControl(req: NodeRef & { action: LocalAiAction }): Promise<LocalAiRunView>;
  /**
   * Installs LocalAI's release `version` (vX.Y.Z; default, or `latest`: the latest), its sha256 checked against the release's checksums
   * file. A LocalAI already running goes through a gated swap: its loaded models noted, stopped, the new build started
   * and the models loaded again; any step failing rolls back to the previous build. Answers when it is done. `as`: what
   * the user asked for, as the operation is named (default: an upgrade when a build is installed).
   */
  localaiInstall(req: NodeRef & { version?: string; as?: 'install' | 'upgrade' }): Promise<LocalAiRunView>;
  /** Back to the build kept before the last install, by the same gated swap. */
  localaiRollback(req: NodeRef): Promise<LocalAiRunView>;
  /**
   * Cancels the install, upgrade or rollback under way if its swap has not begun (LocalAI is then as it was), and
   * answers once it ended; past that point it goes on. Refused when none is under way.
   */
  localaiCancel(req: NodeRef): Promise<LocalAiCancel>;
  /** LocalAI's last log lines (stdout and stderr), oldest first. */
  localaiLogs(req: NodeRef & { lines?: number }): Promise<string[]>;
  /** The latest release the release source offers. */
  localaiLatest(req: NodeRef): Promise<{ latest: string }>;
}

export interface LocalAiServerRequest {
  url: string;
  /** One of the server's API keys (LocalAI's `Authorization: Bearer`). */
  apiKey?: string;
  /** The user's consent to a plain http:// server on another machine, its key and calls crossing the network in clear. */
  insecure?: boolean;
}

/** A LocalAI distributed cluster: its frontend's admin API and the NATS server its workers answer on. */
export interface LocalAiJoinRequest {
  frontend: string;
  /** An admin's API key (LocalAI's `Authorization: Bearer`). */
  apiKey?: string;
  nats: string;
  natsUser?: string;
  natsPassword?: string;
  natsToken?: string;
  natsCredsFile?: string;
  natsCaFile?: string;
  insecure?: boolean;
}

export interface ClusterInviteRequest {
  role: InvitedRole;
  name?: string;
  labels: Record<string, string>;
  /** How long it may be used: a minute to seven days. */
  expiresMinutes: number;
}

/** How a host logs into a NATS server: a user and password, a token or a `.creds` file; a CA for tls://. */
export interface NatsCredentials {
  user?: string;
  password?: string;
  token?: string;
  /** A NATS `.creds` file (user JWT + nkey seed). */
  credsFile?: string;
  /** A CA file for `tls://` servers with a private CA. */
  caFile?: string;
  /** Join a non-loopback server with no credentials anyway. */
  insecure?: boolean;
}

export interface ClusterJoinRequest extends NatsCredentials {
  url: string;
  name?: string;
}

/** Everything a host serves to its viewers (the UI, the CLI). */
export interface HangarApi extends NodeApi, ClusterApi {}

export type NodeMethod = keyof NodeApi;
export type HangarMethod = keyof HangarApi;
export type NodeRequest<M extends HangarMethod> = Parameters<HangarApi[M]>[0];

/** What a host offers a renderer: the host API plus a live event feed. */
export interface HangarBridge extends HangarApi {
  /** Returns an unsubscribe function. */
  onEvent(listener: (event: NodeEvent) => void): () => void;
}

export const LOCAL_NODE = 'local';

/** Every NodeApi method name. The compiler checks the list is complete; transports derive their channels from it. */
export const nodeMethods = [
  'info', 'gallery', 'backends', 'processes', 'jobs', 'install', 'upgrade', 'upgradeAll', 'rollback', 'chooseVariant', 'delete',
  'resolveLeftover', 'waitJob', 'cancelJob', 'load', 'respawn', 'restart', 'respawnBackend', 'stop', 'unload', 'stopProcess', 'scan', 'logs', 'settings', 'updateSettings',
  'installVersion', 'resources', 'drain',
] as const satisfies readonly NodeMethod[];

export const clusterMethods = [
  'nodes', 'rollout', 'rollouts', 'rollbackRollout', 'resumeRollout', 'pin', 'unpin', 'desired', 'clusterSettings', 'updateClusterSettings', 'clusterStatus',
  'clusterInvitations', 'clusterInvite', 'clusterJoin',
  'localaiSettings', 'updateLocalaiSettings', 'localaiServer', 'updateLocalaiServer',
  'localaiRun', 'localaiControl', 'localaiInstall', 'localaiRollback', 'localaiCancel', 'localaiLogs', 'localaiLatest',
] as const satisfies readonly (keyof ClusterApi)[];

/** Every method a host serves; a node serves only `nodeMethods` to the cluster. */
export const hangarMethods = [...nodeMethods, ...clusterMethods] as const;

type Unlisted = Exclude<HangarMethod, (typeof hangarMethods)[number]>;
const everyMethodListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyMethodListed;

/** A bridge whose every method forwards to `call`: one place turns a transport into the NodeApi shape. */
export function bridgeFrom(
  call: (method: HangarMethod, params: unknown) => Promise<unknown>,
  onEvent: HangarBridge['onEvent'],
): HangarBridge {
  const api = Object.fromEntries(hangarMethods.map((method) => [method, (params: unknown) => call(method, params)]));
  return { ...(api as unknown as HangarApi), onEvent };
}
