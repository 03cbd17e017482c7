// A backend process as every view shows it: its state, its cwd's truth, how it ended, its log. Plain JSON only: no bigint, no Date.

export type CwdStatus = 'ok' | 'stale' | 'unknown';

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
  /** Why the LocalAI server that runs it cannot be asked now ("LocalAI is not running (since …)"): nothing can be done to it. */
  localaiDown?: string | null;
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

/** GPU memory a supervised process (with its descendants) holds, as the vendor's tool reports it per process. */
export interface ProcessVram {
  model: string;
  pid: number;
  vramBytes: number;
}
