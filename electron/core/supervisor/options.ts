// The supervisor's settings: what a host may set, and what holds where it sets nothing.
import { join, resolve } from 'node:path';
import { LOG_MAX_BYTES } from './log-file.ts';
import { DEFAULT_RESTART_RULES, type RestartClock, type RestartRules } from './restart-policy.ts';

export interface SupervisorOptions {
  backendsDir: string;
  modelsDir: string;
  stateDir: string;
  /** Each model's log files (default: `logs` beside stateDir). */
  logsDir?: string;
  logMaxBytes?: number;
  /** e.g. { HANGAR_NODE: process.execPath } (+ ELECTRON_RUN_AS_NODE in Electron). */
  runtimeEnv: Record<string, string>;
  grpcToken?: string;
  portRange?: [number, number];
  portQuarantineMs?: number;
  stopGraceMs?: number;
  /** How long a start (spawn to Health) and a LoadModel may take at least (see start-budget.ts). */
  startTimeoutMs?: number;
  backstopMs?: number;
  /** How often every ready backend is asked for Health (and Status), each call bounded by healthTimeoutMs. */
  healthEveryMs?: number;
  healthTimeoutMs?: number;
  /** The host's restart rules; a model's load may set its own delay and limit. */
  restartRules?: Partial<RestartRules>;
  /** The time a process's uptime is read on and its restart waits on (tests move it on rather than sleep). */
  restartClock?: RestartClock;
  /** Put each backend process in a cgroup of its own where the machine allows it (default true; see cgroups.ts). */
  cgroups?: boolean;
  /** Start again, model loaded, every model that ran when the previous host run closed ("start backends on launch"). */
  restoreOnStart?: boolean;
  /**
   * Runs work that starts a model again by itself (a restart after a crash, a reload after a host restart) under
   * the lock its caller's own operations on that backend take, so it never races a swap of the backend.
   */
  backendLock?: <T>(backend: string, work: () => Promise<T>) => Promise<T>;
}

export type SupervisorSettings = Required<Omit<SupervisorOptions, 'grpcToken' | 'backendLock' | 'restartRules' | 'restartClock'>> &
  Pick<SupervisorOptions, 'grpcToken' | 'backendLock' | 'restartClock'> & { restartRules: RestartRules };

/** The options with every default filled in and the directories absolute. */
export function settingsOf(options: SupervisorOptions): SupervisorSettings {
  return {
    // Below Linux's ephemeral range (32768+), so an outgoing connection never takes a backend's port.
    portRange: [30100, 30999],
    portQuarantineMs: 60_000,
    stopGraceMs: 3000,
    startTimeoutMs: 10 * 60_000,
    backstopMs: 15_000,
    healthEveryMs: 10_000,
    healthTimeoutMs: 2000,
    cgroups: true,
    restoreOnStart: false,
    logMaxBytes: LOG_MAX_BYTES,
    logsDir: join(resolve(options.stateDir), '..', 'logs'),
    ...options,
    restartRules: { ...DEFAULT_RESTART_RULES, ...options.restartRules },
    backendsDir: resolve(options.backendsDir),
    modelsDir: resolve(options.modelsDir),
    stateDir: resolve(options.stateDir),
  };
}
