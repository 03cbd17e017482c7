// Installed backends, gallery entries and the jobs that change them. Plain JSON only: no bigint, no Date.
import type { ErrorCode } from './errors.ts';
import type { ProcessView } from './processes.ts';

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
  /**
   * What kind of failure `error` is, as an error envelope's code says (a checksum that does not match is bad input);
   * absent before a job fails, and for jobs kept by a version that did not say.
   */
  errorCode?: ErrorCode;
  /** What the user should know about a job that went through, e.g. processes it found and left running. */
  notice: string | null;
  startedAt: string;
  finishedAt: string | null;
}

export interface GalleryProblem {
  gallery: string;
  message: string;
}

export interface UpgradeAllResult {
  backend: string;
  ok: boolean;
  error: string | null;
  job: JobView | null;
}
