// DTOs that cross every transport (Electron IPC, WebSocket). Plain JSON only: no bigint, no Date.

export type CwdStatus = 'ok' | 'stale' | 'unknown';
import type { NodeMethod } from './api.ts';

/**
 * starting: spawned, not answering Health yet. loading: LoadModel under way. ready: answers Health (and, when a model
 * was loaded, Status says so). unresponsive: stopped answering Health. stale: its directory was replaced. stopping: on
 * its way out. exited / crashed: ended by itself (exit code 0 / anything else), the row stays. crash-looping: crashed
 * too often to be restarted again.
 */
export type ProcessState =
  | 'starting'
  | 'loading'
  | 'ready'
  | 'unresponsive'
  | 'stale'
  | 'stopping'
  | 'exited'
  | 'crashed'
  | 'crash-looping';

/** When a process that ended by itself is started again (as PM2's autorestart). */
export type RestartPolicy = 'never' | 'on-failure' | 'always';

/** What a load asks of the model's restarts; what it leaves out stays as it was (at first, the host's defaults). */
export interface RestartOptions {
  restart?: RestartPolicy;
  /** The wait before a restart after a process ended soon after its start; it doubles with each such end in a row. */
  restartDelayMs?: number;
  /** This many ends within a minute leave the model crash-looping. */
  maxRestarts?: number;
  /** How long its start (spawn to Health) and its LoadModel may take at least; the node's start-timeout otherwise. */
  startTimeoutMs?: number;
}

/** How a process ended by itself. */
export interface ProcessExit {
  code: number | null;
  signal: string | null;
  at: string;
  /** Its last stderr lines. */
  tail: string[];
}

export interface ProcessView {
  model: string;
  /** '' where its node does not say (a LocalAI worker, for a model not named like its backend). */
  backend: string;
  /** 0 where its node reports none (a LocalAI worker). */
  pid: number;
  /** 0 where its node reports none. */
  port: number;
  /** The backend directory the process was spawned in ('' for a legacy entry). */
  dir: string;
  /** '' where its node reports none (a LocalAI worker). */
  startedAt: string;
  state: ProcessState;
  cwd: CwdStatus;
  cwdReason: string;
  /** What the OS says the process's cwd is (`/proc/PID/cwd`), when known. */
  procCwd: string | null;
  /** Whether the model is loaded in it (LoadModel answered, and Status has not said otherwise since). */
  loaded: boolean;
  policy: RestartPolicy;
  /** How many times Hangar started this model again after its process ended or was replaced. */
  restarts: number;
  /** The first wait after an end soon after the start (a process that ran a while is restarted at once). */
  restartDelayMs: number;
  /** Ends within a minute that leave it crash-looping. */
  maxRestarts: number;
  /** What Hangar last did to this row, e.g. "respawned pid A → B: its directory was replaced". */
  message: string | null;
  /** Why the row is not what it should be: a failed reload, a crash loop, no Health answer. */
  error: string | null;
  exit: ProcessExit | null;
  /** CPU use in percent of one core since the previous sample (null when unknown). */
  cpu: number | null;
  /** Resident memory in bytes (null when unknown). */
  rss: number | null;
  /** While it starts or loads: when Hangar gives up on it. */
  deadline?: string | null;
  /** The longest its backend's current phase (start, or load while loading) took on this node, in ms (null: none yet). */
  longestMs?: number | null;
  /** Set for a model a linked LocalAI server runs (Hangar does not supervise its process). */
  runBy?: 'localai';
}

export interface PreviousVersion {
  version: string | null;
  installedAt: string | null;
}

/**
 * What a row of the backends listing is on disk. backend: a backend Hangar manages. alias: a name LocalAI lists
 * with no directory of its own (an alias, or a meta directory's own name). leftover: a working directory LocalAI left
 * mid-install or mid-upgrade (`X.install-tmp`, `X.upgrade-tmp`, `X.install-backup`, `X.backup`). foreign: a
 * directory LocalAI runs under a name Hangar does not manage (a space in it, say). kept: the rollback tree of a
 * backend that was deleted outside Hangar.
 */
export type BackendKind = 'backend' | 'alias' | 'leftover' | 'foreign' | 'kept';

/** A working directory LocalAI left behind. */
export interface LeftoverView {
  /** The backend it belongs to. */
  of: string;
  suffix: string;
  /** A backup of a backend that is now gone: Restore puts it back. */
  restorable: boolean;
}

/** The rollback tree of a backend deleted outside Hangar, kept for a while. */
export interface KeptView {
  since: string;
  /** When it is removed. */
  expiresAt: string;
  bytes: number;
}

export interface BackendView {
  name: string;
  kind: BackendKind;
  /**
   * The backend directory `load NAME` starts: the one LocalAI runs for this name (its alias groups win over a meta's
   * own build). null when LocalAI does not list the name.
   */
  runs: string | null;
  /** How LocalAI sees this row where that is not what the row alone says, one sentence each. */
  localai: string[];
  leftover: LeftoverView | null;
  kept: KeptView | null;
  alias: string | null;
  version: string | null;
  digest: string | null;
  sha256: string | null;
  uri: string | null;
  gallery: string | null;
  dir: string;
  installedAt: string | null;
  /** For a meta backend: the concrete backend it points to. */
  metaBackendFor: string | null;
  upgradable: boolean;
  availableVersion: string | null;
  previous: PreviousVersion | null;
  /** Why the backend cannot be used (corrupt metadata.json, missing run.sh), or null. */
  broken: string | null;
  processes: ProcessView[];
  /** Why no upgrade is known for it: its galleries could not be listed (a LocalAI worker's, from its frontend). */
  upgradesUnknown?: string;
}

/** One build a meta backend lists: its capability key and the concrete backend it names. */
export interface MetaVariant {
  capability: string;
  backend: string;
  /** Whether that build runs on this node (LocalAI's compatibility rule); false also when no gallery lists it. */
  compatible: boolean;
}

export interface MetaResolution {
  /** The concrete build an install picks on this node, or null when none of its builds runs here. */
  resolves: string | null;
  /** The capability key of that build. */
  capability: string | null;
  /** Why that build: "nvidia-cuda-12: NVIDIA GPU, CUDA 12 toolkit", or that the user picked it. */
  reason: string;
  /** True when the user picked the build on this node rather than the automatic choice. */
  picked: boolean;
  variants: MetaVariant[];
  /** The concrete build installed for this meta on this node, or null. */
  installedAs: string | null;
}

export interface GalleryEntryView {
  name: string;
  gallery: string;
  alias: string | null;
  version: string | null;
  uri: string | null;
  description: string | null;
  license: string | null;
  tags: string[];
  icon: string | null;
  installed: boolean;
  upgradable: boolean;
  /** False when the entry does not run on this node (LocalAI would not offer it). */
  compatible: boolean;
  /** null for a concrete entry; its builds and what it resolves to on this node for a meta entry. */
  meta: MetaResolution | null;
}

export type JobKind = 'install' | 'upgrade' | 'rollback' | 'delete';
export type JobState = 'queued' | 'running' | 'done' | 'failed' | 'cancelled';

export interface JobView {
  id: string;
  node: string;
  kind: JobKind;
  backend: string;
  state: JobState;
  phase: string;
  bytes: number;
  totalBytes: number | null;
  error: string | null;
  /** What the user should know about a job that went through, e.g. processes it found and left running. */
  notice: string | null;
  startedAt: string;
  finishedAt: string | null;
}

export interface NodeInfo {
  id: string;
  name: string;
  platform: string;
  arch: string;
  capability: string;
  home: string;
  backendsDir: string;
  modelsDir: string;
  galleries: string[];
  /** Why a gallery could not be read, or which of its entries were skipped; empty when all is well. */
  galleryProblems: GalleryProblem[];
  version: string;
  /** How a stop finds all of a backend's processes here: a cgroup of each one's own, or its group and session (and what that misses). */
  processTracking: string;
  /** The machine's own network addresses (not loopback): how a LocalAI worker on it is recognised. */
  addresses: string[];
}

export interface GalleryProblem {
  gallery: string;
  message: string;
}

export interface ScanEntry {
  pid: number;
  command: string;
  cwd: string;
  status: CwdStatus;
  supervised: boolean;
  backend: string | null;
}

export interface LoadResult {
  pid: number;
  port: number;
  reused: boolean;
  message: string;
}

export interface LogLine {
  model: string;
  stream: 'stdout' | 'stderr';
  text: string;
  at: string;
}

export interface UpgradeAllResult {
  backend: string;
  ok: boolean;
  error: string | null;
  job: JobView | null;
}

/** One gallery a node reads: `location` is "starter" (the one Hangar ships), an absolute path, or a URL. */
export interface GallerySetting {
  name: string;
  location: string;
  enabled: boolean;
}

/** A node's settings, kept in its home; each takes effect at once. */
export interface NodeSettings {
  /** In order: the first gallery that lists a name wins. */
  galleries: GallerySetting[];
  /** Upgrade every upgradable backend when a gallery changes, and every `autoUpgradeHours`. */
  autoUpgrade: boolean;
  autoUpgradeHours: number;
  /** The loopback ports backends are started on. */
  portRange: [number, number];
  /** Leave the backends running when the host quits (they are re-adopted on the next start). */
  keepBackendsRunning: boolean;
  /** Start again, on the host's next start, the models that ran when it quit. */
  startBackendsOnLaunch: boolean;
  /** KEY=VALUE tags the cluster selects nodes by (`--on label:gpu=nvidia`). */
  labels: Record<string, string>;
  /** No rollout or convergence touches a cordoned node. */
  cordoned: boolean;
  /**
   * Before an install, upgrade or rollback is done, start the new build once and wait for its Health answer when no
   * process of the old one runs to be respawned from it (those are the health gate otherwise).
   */
  smokeStart: boolean;
  /**
   * After a swap of a backend (Hangar's, or LocalAI's own), bring back on the new tree the models a linked LocalAI
   * server runs from the replaced one (shutdown, then load).
   */
  localaiRespawn: boolean;
  /** Start LocalAI run by Hangar with the agent (`hangar localai`). */
  localaiAutostart: boolean;
  /**
   * How long a backend's start (spawn to Health) and a model's LoadModel may take, in seconds; never less than twice the
   * longest this node has seen that backend take.
   */
  startTimeoutSec: number;
  /** A backend's own start timeout, in seconds, over startTimeoutSec (a model's `load --start-timeout` is over both). */
  backendStartTimeoutSec: Record<string, number>;
}

export interface SettingsView {
  settings: NodeSettings;
  /** Settings the host fixed for this run (how it was started); they cannot be changed until it restarts. */
  fixed: (keyof NodeSettings)[];
}

/** How a host joins a cluster, as its viewers may see it: a password or token is never sent back, only that one is kept. */
export interface ClusterJoin {
  url: string;
  name: string | null;
  user: string | null;
  credsFile: string | null;
  caFile: string | null;
  insecure: boolean;
  hasPassword: boolean;
  hasToken: boolean;
}

/** The LocalAI cluster a host manages workers of, as its viewers may see it: secrets only as "one is kept". */
export interface LocalAiJoin {
  /** The frontend's address (`local-ai run --distributed`), e.g. http://lai.lan:8080. */
  frontend: string;
  hasApiKey: boolean;
  /** The NATS server the frontend and its workers use. */
  nats: string;
  natsUser: string | null;
  hasNatsPassword: boolean;
  hasNatsToken: boolean;
  natsCredsFile: string | null;
  natsCaFile: string | null;
  insecure: boolean;
}

/** How a host's link to the LocalAI cluster stands. */
export interface LocalAiStatusView {
  frontend: string;
  /** False while the frontend or NATS cannot be reached; `reason` says why. */
  connected: boolean;
  reason: string | null;
  /** The backend workers its frontend lists. */
  workers: number;
  refreshedAt: string | null;
}

/** The LocalAI server beside this node (`local-ai run`, sharing its backends directory), as Settings show it. */
export interface LocalAiServerView {
  /** null: none is linked. */
  url: string | null;
  /** Whether an API key is kept (it is never sent back). */
  hasApiKey: boolean;
  /** The user allowed it over plain http:// from another machine. */
  insecure: boolean;
  /** Why it cannot be changed here (set on the agent's command line), or null. */
  fixed: string | null;
  status: LocalAiServerStatus | null;
}

export interface LocalAiServerStatus {
  connected: boolean;
  /** Why not, in one line ("connection refused", "refused the API key (401)"). */
  reason: string | null;
  /** What GET /version says. */
  version: string | null;
  /** How many models it has loaded. */
  models: number;
  /** Where its backends and this node's directory differ, or null when they agree. */
  backendsNote: string | null;
  checkedAt: string | null;
}

export interface LocalAiSettingsView {
  localai: LocalAiJoin | null;
  /** Why it cannot be changed here (set on the agent's command line), or null. */
  fixed: string | null;
  status: LocalAiStatusView | null;
}

/** A machine's roles in a cluster joined by invitation. */
export type InvitedRole = 'node' | 'viewer' | 'node+viewer';

/** Settings → Cluster's invitations: whether this host's home may make them, and the membership it holds. */
export interface ClusterInvitationsView {
  /** The home ran `hangar cluster init`: it invites machines. */
  admin: boolean;
  member: { cluster: string; url: string; name: string; role: InvitedRole } | null;
  /** It holds a membership this running host is not connected with: it joins when the host next starts. */
  restart: boolean;
}

/** An invitation made from Settings: the one command that joins the machine. It holds a secret, shown only to who asked. */
export interface ClusterInvitation {
  command: string;
  name: string;
  role: InvitedRole;
  /** ISO time after which it is refused. */
  expires: string;
}

export interface ClusterSettingsView {
  /** What the host joined when it started, or null when it runs alone. */
  joined: ClusterJoin | null;
  /** What it joins when it next starts. */
  next: ClusterJoin | null;
  /** Why the cluster cannot be changed here, or null. */
  fixed: string | null;
}

export type NodeEvent =
  | { type: 'job'; node: string; job: JobView }
  | { type: 'backend'; node: string; backend: BackendView }
  | { type: 'backend-removed'; node: string; name: string }
  | { type: 'process'; node: string; process: ProcessView }
  | { type: 'process-removed'; node: string; model: string }
  | { type: 'log'; node: string; line: LogLine }
  | { type: 'gallery-changed'; node: string; problems: GalleryProblem[] }
  /** Gallery entries whose installed/upgradable state a backend change just altered, as gallery() now returns them. */
  | { type: 'gallery-entries'; node: string; entries: GalleryEntryView[] }
  | { type: 'settings'; node: string; settings: SettingsView }
  | { type: 'member'; node: string; member: NodeCard }
  /** A node this host no longer lists: a stranger (neither trusted by it nor trusting it) that fell silent. */
  | { type: 'member-removed'; node: string }
  | { type: 'rollout'; node: string; rollout: RolloutView }
  /** The cluster's desired versions and how each node stands against them changed. */
  | { type: 'desired'; node: string; desired: DesiredStateView }
  /** The host's link to the cluster changed: lost, back, or refused something by the server. */
  | { type: 'cluster-status'; node: string; status: ClusterStatusView };

/** unknown: this host lost its link to the NATS server and cannot tell. */
export type NodeStatus = 'online' | 'offline' | 'unknown';

/**
 * Whether this host may act on a member: `self` is its own node; `trusted`, the member's trust list holds this
 * host's key; `open`, the member serves any caller (started with --insecure-any-caller); `not-trusted`, it refuses
 * this host's calls.
 */
export type NodeAccess = 'self' | 'trusted' | 'open' | 'not-trusted';

/** One member of the cluster as its viewers see it: what its heartbeats say, and whether they still arrive. */
export interface NodeCard {
  /** The stable node id kept in the node's home; `local` for a host that is in no cluster. */
  id: string;
  name: string;
  /** True for the node this host runs. */
  self: boolean;
  status: NodeStatus;
  /** Why the node is offline, or null. */
  reason: string | null;
  host: string;
  platform: string;
  arch: string;
  capability: string;
  version: string;
  counts: NodeCounts;
  heartbeatMs: number;
  lastSeen: string;
  access: NodeAccess;
  labels: Record<string, string>;
  cordoned: boolean;
  /** The machine as its last heartbeat described it; null from a node that sends none. */
  resources: NodeResources | null;
  /** What the node is; absent: a Hangar node. */
  kind?: NodeKind;
  /** The node methods it answers; absent: every one (a Hangar node). The UI and the CLI turn the rest off. */
  can?: NodeMethod[];
  /** Set on a LocalAI worker: what LocalAI's frontend says of it. */
  localai?: LocalAiWorkerView;
  /** Set on a Hangar node that shares its machine and backends directory with a LocalAI worker: that worker's id. */
  pairedWorker?: string;
  /**
   * Set on this host's own machine when it joined the cluster as a viewer only: it is listed, but `--on all`, a label,
   * a pin or a rollout never selects it, and it has no cordon or drain.
   */
  viewerOnly?: true;
}

/**
 * hangar: a machine running Hangar. localai-worker: a `local-ai worker` of a LocalAI distributed cluster, managed over
 * its own control protocol; what needs Hangar on the machine (rollback, respawn, logs, stale-cwd detection) is off.
 */
export type NodeKind = 'hangar' | 'localai-worker';

/** A LocalAI worker as its frontend's node registry lists it. */
export interface LocalAiWorkerView {
  /** LocalAI's own node id (its subjects are `nodes.<id>.…`). */
  id: string;
  /** LocalAI's word: healthy, unhealthy, pending (awaiting approval), draining, offline, registering. */
  status: string;
  /** The gRPC address it registered (host:port). */
  address: string;
  gpuVendor: string | null;
  totalVramBytes: number;
  availableVramBytes: number;
  /** The frontend that lists it. */
  frontend: string;
  /** The Hangar node on the same machine and backends directory, whose own actions apply to it; null when none. */
  pairedWith: string | null;
}

export interface NodeCounts {
  backends: number;
  processes: number;
  stale: number;
  upgradable: number;
  /** Backends that differ from the cluster's desired version for this node. */
  drift: number;
}

/** A machine's capacity and use, read from /proc, statfs and the GPU vendors' tools. */
export interface NodeResources {
  cpu: { count: number; load1: number };
  memory: { totalBytes: number; availableBytes: number } | null;
  /** The filesystem of the backends directory. */
  disk: { totalBytes: number; freeBytes: number } | null;
  gpus: GpuView[];
  /** The vendor tools that answered ("nvidia-smi"); empty: none was found, which is not the same as no GPU. */
  gpuTools: string[];
  /** Why a tool that is there did not answer, or null. */
  gpuProblem: string | null;
  at: string;
}

export interface GpuView {
  vendor: 'nvidia' | 'amd' | 'intel' | 'apple';
  index: number;
  model: string;
  vramTotalBytes: number | null;
  vramUsedBytes: number | null;
  /** Percent busy, when the tool says. */
  utilization: number | null;
}

/** GPU memory a supervised process (with its descendants) holds, as the vendor's tool reports it per process. */
export interface ProcessVram {
  model: string;
  pid: number;
  vramBytes: number;
}

export interface ResourcesView extends NodeResources {
  processes: ProcessVram[];
}

/** How a host takes part in the cluster: a node serves its own subjects; a viewer watches and calls the nodes. */
export type ClusterRole = 'node' | 'viewer' | 'node+viewer';

/** What a host's cluster link has seen and refused, for `hangar cluster status` and `hangar nodes`. */
export interface ClusterStatusView {
  /** null: the host is in no cluster. */
  role: ClusterRole | null;
  /** This machine's node id in the cluster (derived from its key). */
  id: string | null;
  /** This host's public key, as a node's trust list takes it (`hangar cluster trust KEY`). */
  key: string | null;
  /** How many viewer keys this node acts for. */
  trusted: number;
  /** Started with --insecure-any-caller: acts on every call, signed or not. */
  openToAnyCaller: boolean;
  /** What was heard from the cluster and not taken, by reason. */
  dropped: { cards: Record<string, number>; events: Record<string, number>; replies: Record<string, number>; records: Record<string, number> };
  /** Calls this node refused, by reason. */
  refused: Record<string, number>;
  /** What this node could not send, by reason. */
  unsent: Record<string, number>;
  /** What the NATS server refused this host (permission violations), oldest first. */
  violations: ClusterViolation[];
  /** The link to the NATS server: down while the server cannot be reached (the client keeps retrying). */
  link: { connected: boolean; since: string; reason: string | null };
  /** The cluster's key-value store (JetStream), where desired state and rollouts live. */
  store: { available: boolean; reason: string | null };
  /** Values in the store that this host does not take: signed by keys it does not trust. */
  untrusted: UntrustedRecordView[];
}

export interface UntrustedRecordView {
  bucket: 'desired' | 'rollouts';
  /** The backend of a desired version, the id of a rollout. */
  name: string;
  /** The key id that signed it. */
  by: string;
  at: string;
}

export interface ClusterViolation {
  message: string;
  count: number;
  last: string;
}

/** interrupted: its coordinator stopped updating it (it died or lost the cluster); any viewer can resume or roll it back. */
export type RolloutState = 'running' | 'done' | 'halted' | 'rolling-back' | 'rolled-back' | 'interrupted';
export type RolloutStep = 'pending' | 'upgrading' | 'upgraded' | 'unchanged' | 'failed' | 'skipped' | 'rolled-back';

/** A rolling upgrade of one backend across the cluster, one node (or maxParallel nodes) at a time. */
export interface RolloutView {
  id: string;
  backend: string;
  /** The version every node is brought to; null when the galleries offer a new build under no version (a digest). */
  version: string | null;
  /** Which nodes: `all`, `label:KEY=VALUE` or `nodes:ID,ID`. */
  on: string;
  maxParallel: number;
  state: RolloutState;
  startedAt: string;
  finishedAt: string | null;
  /** The host that runs it (or last ran it). */
  coordinator: { id: string; name: string };
  /** Set while interrupted: what it was doing, since when, and why. */
  interrupted: { while: 'running' | 'rolling-back'; at: string; reason: string } | null;
  nodes: RolloutNode[];
}

export interface RolloutNode {
  id: string;
  name: string;
  step: RolloutStep;
  /** Why it failed or was skipped, or null. */
  reason: string | null;
  from: string | null;
  to: string | null;
}

/**
 * "echo should be 2.0.0 on these nodes", as a viewer recorded it in the cluster. `installMissing`: nodes without the
 * backend install it (a pin); otherwise only nodes that have it are brought to the version (a rolling upgrade).
 */
export interface DesiredVersion {
  backend: string;
  version: string;
  on: string;
  installMissing: boolean;
  /** The rollout that recorded it, or null for a pin. */
  rollout: string | null;
  /** The key id that signed it, and when. */
  by: string;
  at: string;
}

/**
 * How one node stands against a desired version. converged: runs it; converging: its upgrade is under way;
 * waiting: a rollout will bring it there, or a retry is due; drifted: differs and cannot follow (the reason says
 * why: not offered, cordoned); failed: gave up after its tries.
 */
export type ConvergenceState = 'converged' | 'converging' | 'waiting' | 'drifted' | 'failed';

export interface NodeConvergence {
  node: string;
  backend: string;
  wanted: string;
  /** What the node runs now (null: not installed). */
  version: string | null;
  state: ConvergenceState;
  reason: string | null;
  tries: number;
  at: string;
}

export interface DesiredStateView {
  /** False when the cluster keeps no state (no JetStream): `reason` says why. */
  available: boolean;
  reason: string | null;
  desired: DesiredVersion[];
  /** What each node last said of its own convergence. */
  nodes: NodeConvergence[];
}

/** The error shape every transport returns: a code and one clear line, never a stack. */
export interface ErrorEnvelope {
  code: ErrorCode;
  message: string;
}

export type ErrorCode =
  | 'invalid-request'
  | 'forbidden'
  | 'not-found'
  | 'conflict'
  | 'bad-input'
  | 'failed';

/** LocalAI run by Hangar (`hangar localai …`): where its process stands. */
export type LocalAiRunState = 'not-installed' | 'stopped' | 'starting' | 'ready' | 'stopping' | 'crashed' | 'crash-looping';

/** An install, upgrade or rollback of LocalAI itself: what it did, or why it failed with LocalAI's last log lines. */
export interface LocalAiOperation {
  kind: 'install' | 'upgrade' | 'rollback';
  state: 'running' | 'done' | 'failed';
  phase: string;
  /** The outcome in one line (done), or why it failed. */
  message: string | null;
  /** LocalAI's own last log lines when it failed. */
  logTail: string[];
  startedAt: string;
  finishedAt: string | null;
}

export interface LocalAiRunView {
  state: LocalAiRunState;
  pid: number | null;
  /** The installed build's version (vX.Y.Z), or what /version said of a binary given with --localai-bin. */
  version: string | null;
  /** The build kept for a rollback. */
  previousVersion: string | null;
  /** http://127.0.0.1:PORT while it runs. */
  url: string | null;
  binary: string | null;
  /** Set when the agent was given --localai-bin: install, upgrade and rollback are refused. */
  fixedBinary: boolean;
  modelsPath: string;
  backendsPath: string;
  /** LocalAI's own processes (its loaded models), killed with it if it leaves them behind. */
  processes: number;
  /** Restarts after crashes since the last start asked for. */
  restarts: number;
  /** How its last process ended by itself, or null. */
  lastExit: string | null;
  /** Where the server link stands: linked to it, or why not. */
  link: string | null;
  operation: LocalAiOperation | null;
  /** Installed backends LocalAI's gallery marked for upgrade when LocalAI's version last changed, until upgraded. */
  marked: LocalAiMarkedBackend[];
}

/** An installed backend LocalAI's gallery marks for upgrade, as found once LocalAI's version changed. */
export interface LocalAiMarkedBackend {
  name: string;
  /** "new build": the same version or tag with another image digest; else "vA → vB", the gallery's other version. */
  why: string;
  /** The LocalAI version the check was made for. */
  since: string;
}

export type LocalAiAction = 'start' | 'stop' | 'restart';
