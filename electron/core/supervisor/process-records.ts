// The supervisor's rows: each model's process (running, or ended and kept to say how) and what the model should run
// as, saved to the table on every change and shown to the world as ProcessViews.
import { join } from 'node:path';
import type { Result } from 'execa';
import { HangarError, type LogLine, type ProcessExit, type ProcessState, type ProcessView, type RestartOptions, type RestartPolicy } from '../../../shared/index.ts';
import { humanDuration } from '../../../shared/progress.ts';
import type { CwdReport } from './cwd-probe.ts';
import type { BackendClient, LoadModelRequest } from './grpc-client.ts';
import type { DirIdentity } from './identity.ts';
import type { LogRing } from './log-ring.ts';
import type { Phase } from './start-budget.ts';
import { DEFAULT_RESTART_RULES, type RestartHistory, type RestartRules } from './restart-policy.ts';
import type { ModelEntry, ProcessTable, TableEntry } from './table.ts';
import type { RowUsage } from './row-usage.ts';

export interface BackendTarget {
  name: string;
  /** The backend's live directory (absolute). */
  dir: string;
}

export interface Proc {
  model: string;
  backend: string;
  pid: number;
  port: number;
  /** null: a legacy table entry without a recorded directory. */
  identity: DirIdentity | null;
  startedAt: string;
  startTime: string | null;
  /** The cgroup it runs in (see cgroups.ts), or null where backends get none. */
  cgroup: string | null;
  state: ProcessState;
  cwd: CwdReport;
  /** Settles when a process this host spawned has exited and been reaped; null for an adopted process. */
  result: Promise<Result> | null;
  logs: LogRing | null;
  /** Lets the host exit while a process it spawned keeps running; null for an adopted process. */
  detach: (() => void) | null;
  client: BackendClient;
  retired: boolean;
  /** Set when Hangar itself ends the process: its exit is then no crash. */
  stopping: boolean;
  loaded: boolean;
  message: string | null;
  error: string | null;
  exit: ProcessExit | null;
  /** While it starts or loads: when Hangar gives up on it (ms since the epoch). */
  deadline: number | null;
  /** A stop ended it while it started or loaded (the state it was in then): its start fails saying so. */
  cancelled: 'starting' | 'loading' | null;
}

/** What a model should run as, kept across its processes: what to load again, how to restart, where it listened. */
export interface ModelSpec {
  backend: string;
  load: LoadModelRequest | null;
  policy: RestartPolicy;
  /** The load's --restart-delay and --max-restarts; null: the host's rule. */
  delayMs: number | null;
  maxRestarts: number | null;
  /** The load's --start-timeout (or its LocalAI config's); null: the backend's or the node's. */
  startTimeoutMs: number | null;
  restarts: number;
  /** Its recent ends, for the backoff and the crash-loop rule. */
  history: RestartHistory;
  port: number | null;
}

/** The events the supervisor (an EventEmitter) sends; its parts send them through this. */
export interface SupervisorEvents {
  emit(event: 'process', view: ProcessView): boolean;
  emit(event: 'process-removed', model: string): boolean;
  emit(event: 'log', line: LogLine): boolean;
}

const DEFAULT_POLICY: RestartPolicy = 'on-failure';

export class ProcessRecords {
  private readonly procs = new Map<string, Proc>();
  private readonly specs = new Map<string, ModelSpec>();
  /** Models a previous host run ended with that this run does not start: kept for a later run that will. */
  private carried: ModelEntry[] = [];
  /** Set when a closing host leaves its backends running: what becomes of them is the next host run's to tell. */
  private handedOver = false;

  constructor(
    private readonly table: ProcessTable,
    private readonly usage: RowUsage,
    private readonly events: SupervisorEvents,
    /** The host's restart rules: what a model that asks for none gets. */
    private readonly restartRules: RestartRules = DEFAULT_RESTART_RULES,
    /** The longest start or load of a backend seen here, for the views. */
    private readonly longest: (phase: Phase, backend: string) => number | null = () => null,
  ) {}

  get(model: string): Proc | undefined {
    return this.procs.get(model);
  }

  all(): Proc[] {
    return [...this.procs.values()];
  }

  /** Every model with a row or a spec: a restart under way has a spec, and between two processes no row. */
  models(): string[] {
    return [...new Set([...this.procs.keys(), ...this.specs.keys()])];
  }

  put(proc: Proc): void {
    this.procs.set(proc.model, proc);
  }

  /** The row goes (if it is still the model's), and the world is told. */
  removeRow(proc: Proc): void {
    if (this.procs.get(proc.model) === proc) this.procs.delete(proc.model);
    this.persist();
    this.publish(proc);
    this.events.emit('process-removed', proc.model);
  }

  spec(model: string): ModelSpec | undefined {
    return this.specs.get(model);
  }

  /** The model's spec, made on first use; what the caller asks of its restarts replaces what it had. */
  specFor(model: string, backend: string, asked: RestartOptions = {}): ModelSpec {
    let spec = this.specs.get(model);
    if (!spec) {
      spec = { backend, load: null, policy: DEFAULT_POLICY, delayMs: null, maxRestarts: null, startTimeoutMs: null, restarts: 0, history: freshHistory(), port: null };
      this.specs.set(model, spec);
    }
    spec.backend = backend;
    if (asked.restart) spec.policy = asked.restart;
    if (asked.restartDelayMs !== undefined) spec.delayMs = asked.restartDelayMs;
    if (asked.maxRestarts !== undefined) spec.maxRestarts = asked.maxRestarts;
    if (asked.startTimeoutMs !== undefined) spec.startTimeoutMs = asked.startTimeoutMs;
    return spec;
  }

  setSpec(model: string, spec: ModelSpec): void {
    this.specs.set(model, spec);
  }

  dropSpec(model: string): void {
    this.specs.delete(model);
  }

  /** Every later process of the model loads `request` again, after a host restart too: on disk when this resolves. */
  remember(spec: ModelSpec, request: LoadModelRequest): Promise<void> {
    spec.load = request;
    return this.persisted();
  }

  carry(models: ModelEntry[]): void {
    this.carried = models;
  }

  /** A closing host leaves its backends running: the table stays as it is and their ends are not this run's. */
  handOver(): void {
    this.handedOver = true;
  }

  get isHandedOver(): boolean {
    return this.handedOver;
  }

  /**
   * Saved and on disk: what a user's load or stop changed holds once it answers, even if the host dies right after. A
   * write that failed is said once in the host's log (CoalescedFile), and the change stands in memory.
   */
  async persisted(): Promise<void> {
    this.persist();
    await this.table.flush().catch(() => undefined);
  }

  persist(): void {
    if (this.handedOver) return;
    this.table.save({
      processes: this.all().filter((p) => !p.retired).map((p) => tableEntry(p, this.specs.get(p.model))),
      models: [...this.specs.entries()]
        .map(([model, spec]) => ({ model, ...specEntry(spec) }))
        .concat(this.carried.filter((m) => !this.specs.has(m.model))),
    });
  }

  publish(proc: Proc): void {
    this.events.emit('process', this.view(proc));
  }

  view(proc: Proc): ProcessView {
    const spec = this.specs.get(proc.model);
    const live = !proc.retired && proc.state !== 'stopping';
    const stale = live && proc.cwd.cwd === 'stale';
    const usage = live ? this.usage.sample(proc.pid, proc.startedAt) : { cpu: null, rss: null };
    return {
      model: proc.model,
      backend: proc.backend,
      pid: proc.pid,
      port: proc.port,
      dir: proc.identity?.dir ?? '',
      startedAt: proc.startedAt,
      state: stale ? 'stale' : proc.state,
      cwd: proc.cwd.cwd,
      cwdReason: proc.cwd.cwdReason,
      procCwd: proc.cwd.procCwd,
      loaded: proc.loaded,
      policy: spec?.policy ?? DEFAULT_POLICY,
      restarts: spec?.restarts ?? 0,
      restartDelayMs: spec?.delayMs ?? this.restartRules.baseMs,
      maxRestarts: spec?.maxRestarts ?? this.restartRules.loopLimit,
      message: proc.message,
      error: proc.error,
      exit: proc.exit,
      deadline: proc.deadline === null ? null : new Date(proc.deadline).toISOString(),
      longestMs: this.longest(proc.state === 'loading' ? 'load' : 'start', proc.backend),
      ...usage,
    };
  }
}

/** A new row, starting, that has neither ended nor failed yet. */
export function newRow(fields: Omit<Proc, 'state' | 'retired' | 'stopping' | 'error' | 'exit' | 'deadline' | 'cancelled'>): Proc {
  return { ...fields, state: 'starting', retired: false, stopping: false, error: null, exit: null, deadline: null, cancelled: null };
}

/** What a start or a LoadModel that a stop cut short fails with. */
export function startCancelled(proc: Proc): HangarError {
  const spawned = humanDuration(Date.now() - Date.parse(proc.startedAt));
  return new HangarError('failed', `model ${proc.model}: a stop cancelled it while ${proc.cancelled ?? 'starting'} (pid ${proc.pid}, spawned ${spawned} before)`);
}

export function liveTarget(backendsDir: string, backend: string): BackendTarget {
  return { name: backend, dir: join(backendsDir, backend) };
}

export function specOf(entry: TableEntry | ModelEntry): ModelSpec {
  return {
    backend: entry.backend,
    load: entry.load ?? null,
    policy: entry.policy ?? DEFAULT_POLICY,
    delayMs: entry.restartDelayMs ?? null,
    maxRestarts: entry.maxRestarts ?? null,
    startTimeoutMs: entry.startTimeoutMs ?? null,
    restarts: entry.restarts ?? 0,
    history: freshHistory(),
    port: entry.port,
  };
}

export function freshHistory(): RestartHistory {
  return { quickEnds: 0, backoffMs: 0 };
}

/** What the table keeps of how a model restarts. */
function restartEntry(spec: ModelSpec): Pick<ModelEntry, 'policy' | 'restarts' | 'restartDelayMs' | 'maxRestarts' | 'startTimeoutMs'> {
  return {
    policy: spec.policy,
    restarts: spec.restarts,
    ...(spec.delayMs !== null && { restartDelayMs: spec.delayMs }),
    ...(spec.maxRestarts !== null && { maxRestarts: spec.maxRestarts }),
    ...(spec.startTimeoutMs !== null && { startTimeoutMs: spec.startTimeoutMs }),
  };
}

function specEntry(spec: ModelSpec): Omit<ModelEntry, 'model'> {
  return { backend: spec.backend, ...restartEntry(spec), port: spec.port, ...(spec.load && { load: spec.load }) };
}

/** A dead table entry as a model to start again; an entry from before policies were kept is never restarted. */
export function modelEntryOf(entry: TableEntry): ModelEntry & { pid: number } {
  return { model: entry.model, ...specEntry(specOf(entry)), policy: entry.policy ?? 'never', pid: entry.pid };
}

function tableEntry(proc: Proc, spec: ModelSpec | undefined): TableEntry {
  const { model, backend, pid, port, startedAt, startTime, identity } = proc;
  const entry: TableEntry = { model, backend, pid, port, startedAt, startTime };
  if (spec) Object.assign(entry, restartEntry(spec), spec.load && { load: spec.load });
  return identity ? { ...entry, dir: identity.dir, dev: String(identity.dev), ino: String(identity.ino) } : entry;
}

/** Puts what Hangar did in front of what the row already says (e.g. that its port moved). */
export function tell(proc: Proc, what: string): void {
  proc.message = proc.message ? `${what}; ${proc.message}` : what;
}

/** How a row says its process ended. */
export function endText(exit: ProcessExit): string {
  if (exit.signal) return `was killed by ${exit.signal}`;
  if (exit.code !== null) return `exited with code ${exit.code}`;
  return 'ended (exit status unknown: adopted)';
}
