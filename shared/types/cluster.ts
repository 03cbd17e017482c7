// A cluster's state as its viewers see it: the link, rolling upgrades and the desired versions. Plain JSON only: no bigint, no Date.

/** How a host takes part in the cluster: a node serves its own subjects; a viewer watches and calls the nodes. */
export type ClusterRole = 'node' | 'viewer' | 'node+viewer';

/** What a host's cluster link has seen and refused, for `hangar cluster status` and `hangar nodes`. */
export interface ClusterStatusView {
  /** null: the host is in no cluster. */
  role: ClusterRole | null;
  /** How the role was given, in words (`--cluster-role viewer`, the invitation's role); absent for the default. */
  roleFrom?: string;
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
  /** The name the cluster knows that key by (a member's, its admin's), when this host knows one. */
  byName?: string;
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
  /**
   * Set when a rollout's desired version brought the node to `wanted` after the rollout passed it by (cordoned, away,
   * or not yet joined): that rollout, and what the node ran before. Its rollback covers the node too.
   */
  movedBy?: { rollout: string; from: string | null };
}

export interface DesiredStateView {
  /** False when the cluster keeps no state (no JetStream): `reason` says why. */
  available: boolean;
  reason: string | null;
  desired: DesiredVersion[];
  /** What each node last said of its own convergence. */
  nodes: NodeConvergence[];
}
