// LocalAI beside or run by a node: its link, its process, its upgrades. Plain JSON only: no bigint, no Date.

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

/** LocalAI run by Hangar (`hangar localai …`): where its process stands. */
export type LocalAiRunState = 'not-installed' | 'stopped' | 'starting' | 'ready' | 'stopping' | 'crashed' | 'crash-looping';

/** An install, upgrade or rollback of LocalAI itself: what it did, or why it failed with LocalAI's last log lines. */
export interface LocalAiOperation {
  kind: 'install' | 'upgrade' | 'rollback';
  /** Cancelled: before its swap began, so LocalAI is as it was. */
  state: 'running' | 'done' | 'failed' | 'cancelled';
  phase: string;
  /** Whether a cancel would still stop it: running, and its swap not begun. */
  cancellable: boolean;
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
  /** The last start, if it did not get to ready: when, why, and the lines that LocalAI process wrote. */
  failedStart: { at: string; why: string; logTail: string[] } | null;
  /** Releases Hangar refused to install, each until one of its downloads passes the checks. */
  refused: LocalAiRefusal[];
  /** Installed backends LocalAI's gallery marked for upgrade when LocalAI's version last changed, until upgraded. */
  marked: LocalAiMarkedBackend[];
}

/** A LocalAI release Hangar would not install (its checksum, its size): offering it again invites the same refusal. */
export interface LocalAiRefusal {
  version: string;
  /** Why, without the release's name ("its sha256 is not the one its checksums file lists; …"). */
  reason: string;
  at: string;
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

/** What a cancel of the LocalAI install, upgrade or rollback under way did. */
export interface LocalAiCancel {
  kind: LocalAiOperation['kind'];
  /** False: it was past the point where it can be cancelled (its swap had begun), and goes on. */
  cancelled: boolean;
  /** The phase it was in when asked. */
  phase: string;
  /** How it ended, once cancelled. */
  message: string | null;
}
