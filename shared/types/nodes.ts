// A node as the fleet lists it: its card, its resources, and the events it sends. Plain JSON only: no bigint, no Date.
import type { NodeMethod } from '../api.ts';
import type { BackendView, GalleryEntryView, GalleryProblem, JobView } from './backends.ts';
import type { ClusterStatusView, DesiredStateView, RolloutView } from './cluster.ts';
import type { LogLine, ProcessView, ProcessVram } from './processes.ts';
import type { SettingsView } from './settings.ts';

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
 * this host's calls; `revoked`, an admin revoked it (hangar cluster revoke): the server refuses its credential, so it
 * never comes back with it.
 */
export type NodeAccess = 'self' | 'trusted' | 'open' | 'not-trusted' | 'revoked';

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

export interface ResourcesView extends NodeResources {
  processes: ProcessVram[];
}
