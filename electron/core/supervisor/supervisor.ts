// The backend process supervisor. Its one promise: a process whose directory a reinstall replaced is never
// reused. Every process records the identity (dev/ino) of the directory it was started in; every reuse checks
// that identity against the path again, and on Linux against the process's own cwd.
import { EventEmitter } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  HangarError,
  type LoadResult,
  type LogLine,
  type ProcessState,
  type ProcessView,
  type RestartPolicy,
  type ScanEntry,
} from '../../../shared/index.ts';
import { KeyedLock } from '../locks.ts';
import { probeCwd } from './cwd-probe.ts';
import { Endings, type SelfStart } from './endings.ts';
import { BackendClient, BackendCallError, type LoadModelRequest } from './grpc-client.ts';
import { isSameProcess } from './identity.ts';
import { Launcher } from './launcher.ts';
import { LOG_MAX_BYTES } from './model-log.ts';
import { ModelLogs } from './model-logs.ts';
import { PortPool } from './ports.ts';
import { Reaper, type ParentWatch } from './reaper.ts';
import {
  ProcessRecords,
  endText,
  liveTarget,
  modelEntryOf,
  newRow,
  oneLineOf,
  specOf,
  tell,
  type BackendTarget,
  type ModelSpec,
  type Proc,
} from './records.ts';
import { DEFAULT_RESTART_RULES, RestartScheduler, type RestartRules } from './restart-policy.ts';
import { scanProcesses } from './scan.ts';
import { Stopping, type DirectoryStop } from './stopping.ts';
import { ProcessTable, type ModelEntry, type TableEntry } from './table.ts';
import { UsageSampler } from './usage.ts';

export type { BackendTarget, DirectoryStop };

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
  startTimeoutMs?: number;
  /** The bound on one LoadModel call. */
  loadTimeoutMs?: number;
  backstopMs?: number;
  /** How often every ready backend is asked for Health (and Status), each call bounded by healthTimeoutMs. */
  healthEveryMs?: number;
  healthTimeoutMs?: number;
  restartRules?: RestartRules;
  /** Start again, model loaded, every model that ran when the previous host run closed ("start backends on launch"). */
  restoreOnStart?: boolean;
  /**
   * Runs work that starts a model again by itself (a restart after a crash, a reload after a host restart) under
   * the lock its caller's own operations on that backend take, so it never races a swap of the backend.
   */
  backendLock?: <T>(backend: string, work: () => Promise<T>) => Promise<T>;
}

const WATCH_DEBOUNCE_MS = 2;
/** States in which the health watch asks a backend whether it still answers. */
const WATCHED = new Set<ProcessState>(['ready', 'unresponsive']);

/**
 * Events:
 * - 'process' (ProcessView): a process appeared or changed (state, cwd status, load, exit). A process that ends by
 *   itself stays listed as exited, crashed or crash-looping until it is started again or stopped.
 * - 'process-removed' (model: string): the model has no row any more (stopped by Hangar or the user).
 * - 'log' (LogLine): one line of a backend's stdout/stderr, or a note from Hangar.
 */
export class Supervisor extends EventEmitter {
  private readonly options: Required<Omit<SupervisorOptions, 'grpcToken' | 'backendLock'>> & Pick<SupervisorOptions, 'grpcToken' | 'backendLock'>;
  private readonly modelLogs: ModelLogs;
  private readonly lock = new KeyedLock();
  private readonly ports: PortPool;
  private readonly table: ProcessTable;
  private readonly endings: Endings;
  private readonly stopping: Stopping;
  private readonly launcher: Launcher;
  private readonly records: ProcessRecords;
  private reaper: Reaper | null = null;
  private watcher: FSWatcher | null = null;
  private backstop: NodeJS.Timeout | null = null;
  private healthTimer: NodeJS.Timeout | null = null;
  private debounce: NodeJS.Timeout | null = null;
  private rechecking: Promise<void> | null = null;
  private recheckAgain = false;
  private restoring: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(options: SupervisorOptions) {
    super();
    this.options = {
      // Below Linux's ephemeral range (32768+), so an outgoing connection never takes a backend's port.
      portRange: [30100, 30999],
      portQuarantineMs: 60_000,
      stopGraceMs: 3000,
      startTimeoutMs: 60_000,
      loadTimeoutMs: 5 * 60_000,
      backstopMs: 15_000,
      healthEveryMs: 10_000,
      healthTimeoutMs: 2000,
      restartRules: DEFAULT_RESTART_RULES,
      restoreOnStart: false,
      logMaxBytes: LOG_MAX_BYTES,
      logsDir: join(resolve(options.stateDir), '..', 'logs'),
      ...options,
      backendsDir: resolve(options.backendsDir),
      modelsDir: resolve(options.modelsDir),
      stateDir: resolve(options.stateDir),
    };
    this.ports = new PortPool(this.options.portRange, this.options.portQuarantineMs);
    this.table = new ProcessTable(this.options.stateDir);
    const usage = new UsageSampler();
    const parent: ParentWatch = { watch: (pid) => this.reaper?.watch(pid), unwatch: (pid) => this.reaper?.unwatch(pid) };
    const { lock } = this;
    const selfStart: SelfStart = (backend, model, work) => {
      const run = () => lock.run(model, work);
      return this.options.backendLock ? this.options.backendLock(backend, run) : run();
    };
    this.records = new ProcessRecords(this.table, usage, this);
    this.modelLogs = new ModelLogs(this.records, this, this.options.logsDir, this.options.logMaxBytes);
    this.endings = new Endings({
      records: this.records,
      logs: this.modelLogs,
      ports: this.ports,
      parent,
      usage,
      restarts: new RestartScheduler(this.options.restartRules),
      selfStart,
      startAgain: (old, why) => this.startAgain(old, why),
    });
    this.stopping = new Stopping(this.records, this.endings, lock, this.options.stopGraceMs);
    this.launcher = new Launcher(this.options, {
      records: this.records,
      logs: this.modelLogs,
      ports: this.ports,
      parent,
      endings: this.endings,
      stopping: this.stopping,
    });
  }

  /**
   * Loads the table, re-adopts the backends a previous host left running, starts again (model reloaded) those of
   * them that died meanwhile and whose policy says so, and starts watching.
   */
  /** `restore`: start again what ran when the last host closed (default: the restoreOnStart option). */
  async start(options: { restore?: boolean } = {}): Promise<void> {
    const restoreOnStart = options.restore ?? this.options.restoreOnStart;
    await mkdir(this.options.backendsDir, { recursive: true });
    this.reaper = new Reaper();
    const saved = await this.table.load();
    const gone: Array<ModelEntry & { pid: number }> = [];
    for (const entry of saved.processes) if (!this.adopt(entry)) gone.push(modelEntryOf(entry));
    const stopped = saved.models.filter((m) => !this.records.get(m.model) && !gone.some((g) => g.model === m.model));
    if (!restoreOnStart) this.records.carry(stopped);
    this.records.persist();
    await this.recheck();
    this.watcher = watch(this.options.backendsDir, () => this.scheduleRecheck());
    this.watcher.on('error', () => undefined);
    this.backstop = setInterval(() => void this.recheck(), this.options.backstopMs).unref();
    this.healthTimer = setInterval(() => void this.watchHealth(), this.options.healthEveryMs).unref();
    await this.watchHealth();
    // Died while no host watched: as its policy says. Stopped when the last host closed: if the user wants them back.
    const restore: Array<ModelEntry & { pid?: number }> = gone.filter((e) => e.policy !== 'never');
    if (restoreOnStart) restore.push(...stopped);
    this.restoring = Promise.allSettled(restore.map((e) => this.resurrect(e)));
  }

  /**
   * stopAll: stop every backend. Otherwise leave them running for the next host run to re-adopt (the reaper is
   * released, so they survive this host's exit; see reaper.ts for what that costs).
   */
  async close(options: { stopAll: boolean }): Promise<void> {
    this.closed = true;
    this.watcher?.close();
    if (this.backstop) clearInterval(this.backstop);
    if (this.healthTimer) clearInterval(this.healthTimer);
    if (this.debounce) clearTimeout(this.debounce);
    this.endings.close();
    await this.restoring;
    if (options.stopAll) {
      await Promise.all([...this.records.all().map((p) => p.model)].map((model) => this.stopping.halt(model)));
    } else {
      this.records.handOver();
      for (const proc of this.records.all()) {
        proc.client.close();
        proc.detach?.();
      }
    }
    await this.reaper?.release();
    this.ports.close();
    await this.rechecking;
    await this.table.flush();
    await this.modelLogs.flush();
  }

  list(): ProcessView[] {
    return this.records.all().map((proc) => this.records.view(proc));
  }

  get(model: string): ProcessView | null {
    const proc = this.records.get(model);
    return proc ? this.records.view(proc) : null;
  }

  /** Gate 1: the model's process may serve `target` only if it is alive and its recorded directory is intact. */
  async matches(target: BackendTarget, model: string): Promise<boolean> {
    const proc = this.records.get(model);
    return proc !== undefined && (await this.intact(proc, target));
  }

  /** Gate 2: reuse an intact process, else force-stop whatever runs for the model and spawn into target.dir. */
  ensureRunning(target: BackendTarget, model: string): Promise<{ process: ProcessView; reused: boolean }> {
    return this.lock.run(model, async () => {
      const spec = this.records.specFor(model, target.name);
      const { proc, reused } = await this.ensureLocked(target, model);
      if (!reused) await this.reload(proc, spec);
      return { process: this.records.view(proc), reused };
    });
  }

  /**
   * ensureRunning + LoadModel; the load is remembered, so every later process of the model loads it again.
   * Gate 6: a failure from a stale cwd is explained, respawned and retried once.
   */
  load(target: BackendTarget, model: string, options: { restart?: RestartPolicy } = {}): Promise<LoadResult> {
    return this.lock.run(model, async () => {
      const spec = this.records.specFor(model, target.name, options.restart);
      const request = this.loadRequest(model);
      const { proc, reused, replaced } = await this.ensureLocked(target, model);
      const said = (message: string) => (replaced ? `${replaced}; ${message}` : message);
      try {
        const message = await this.loadInto(proc, request);
        this.records.remember(spec, request);
        return { pid: proc.pid, port: proc.port, reused, message: said(message) };
      } catch (first) {
        await this.refresh(proc);
        if (proc.cwd.cwd !== 'stale') throw this.failLoad(proc, loadError(proc, first));
        const why = `backend ${proc.backend} (pid ${proc.pid}) was running from a directory that a reinstall replaced`;
        await this.stopping.process(proc, true);
        const fresh = await this.launcher.spawnReady(target, model).catch((err: Error) => {
          throw new HangarError('failed', `${why}; the respawn failed: ${err.message}`);
        });
        this.modelLogs.note(fresh, `${why}; respawned from ${target.dir}`);
        const replaced = `respawned pid ${proc.pid} → ${fresh.pid}: its directory was replaced`;
        tell(fresh, replaced);
        try {
          const message = await this.loadInto(fresh, request);
          this.records.remember(spec, request);
          return { pid: fresh.pid, port: fresh.port, reused: false, message: `${replaced}; ${message}` };
        } catch (second) {
          throw this.failLoad(fresh, new HangarError('failed', `${why}; after a respawn, ${loadError(fresh, second).message}`));
        }
      }
    });
  }

  /**
   * The user's stop: Free (unless forced), SIGTERM to the process group, SIGKILL after the grace period, reap. The row
   * goes, and so does what the model should run as (a crashed row is only removed).
   */
  stop(model: string, options: { force?: boolean } = {}): Promise<void> {
    return this.lock.run(model, async () => {
      this.endings.cancelRestart(model);
      this.records.dropSpec(model);
      const proc = this.records.get(model);
      if (!proc) return;
      if (proc.retired) this.records.removeRow(proc);
      else await this.stopping.process(proc, options.force ?? false);
      this.records.persist();
    });
  }

  /** Forced stop and a fresh spawn from join(backendsDir, backend), its model loaded again. */
  respawn(model: string): Promise<ProcessView> {
    return this.lock.run(model, async () => {
      const proc = this.records.get(model);
      if (!proc) throw new HangarError('not-found', `no backend process runs for model ${model}`);
      await this.stopping.process(proc, true);
      return this.records.view(await this.startAgain(proc, `respawned pid ${proc.pid}`));
    });
  }

  /** Starts a model whose process ended (or runs) again, its model reloaded; clears a crash loop. */
  restart(model: string): Promise<ProcessView> {
    return this.lock.run(model, async () => {
      const proc = this.records.get(model);
      if (!proc) throw new HangarError('not-found', `no backend process for model ${model}`);
      this.endings.forgive(model, proc.backend);
      const how = proc.retired ? (proc.exit ? endText(proc.exit) : 'ended') : 'was running';
      if (!proc.retired) await this.stopping.process(proc, true);
      return this.records.view(await this.startAgain(proc, `restarted by the user (pid ${proc.pid} ${how})`));
    });
  }

  respawnBackend(name: string): Promise<ProcessView[]> {
    const models = this.records.all().filter((p) => p.backend === name).map((p) => p.model);
    return Promise.all(models.map((model) => this.respawn(model)));
  }

  /**
   * Gate 4, before a swap: stops every supervised process whose recorded directory identity is dir's current
   * identity (never by name), with its whole tree. Other processes whose cwd is inside dir (by the cwd's identity or
   * path) are Hangar's to stop only when the user says so (stopUnsupervised); otherwise they are left running and
   * reported. `stopped` is for respawnAll() after the swap.
   */
  async stopByDirectory(dir: string, options: { stopUnsupervised?: boolean } = {}): Promise<DirectoryStop> {
    return this.stopping.directory(dir, options);
  }

  /**
   * The process `pid` if a user may stop it through Hangar: one a scan finds that is supervised (its model is
   * returned, to be stopped as such), or that Hangar did not start and whose cwd is stale. Never an arbitrary pid.
   */
  async stoppable(pid: number): Promise<{ entry: ScanEntry; model: string | null }> {
    const entry = pid === process.pid ? undefined : (await this.scan()).find((e) => e.pid === pid);
    if (!entry) throw new HangarError('not-found', `pid ${pid} is not a process of this node's backends (see scan)`);
    if (!entry.supervised && entry.status !== 'stale') {
      throw new HangarError('bad-input', `pid ${pid} (${entry.command || 'no command line'}) was not started by Hangar and its directory is live: Hangar stops only its own processes and stale ones`);
    }
    return { entry, model: this.records.all().find((p) => p.pid === pid)?.model ?? null };
  }

  /** Gate 5, after a swap: runs each model again from its backend's new live directory, ready, its model reloaded. */
  async respawnAll(list: Array<{ model: string; backend: string }>): Promise<ProcessView[]> {
    // Every respawn settles before this answers, so a caller that undoes a swap on failure races no spawn.
    const results = await Promise.allSettled(list.map(({ model, backend }) => this.ensureRunning(liveTarget(this.options.backendsDir, backend), model)));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    return results.map((r) => (r as PromiseFulfilledResult<{ process: ProcessView }>).value.process);
  }

  /** Re-checks every process's cwd now; emits 'process' for each one whose status changed. Coalesces calls. */
  recheck(): Promise<void> {
    if (this.rechecking) {
      this.recheckAgain = true;
      return this.rechecking;
    }
    this.rechecking = (async () => {
      do {
        this.recheckAgain = false;
        await Promise.all(this.records.all().map((proc) => this.refresh(proc)));
      } while (this.recheckAgain);
      this.rechecking = null;
    })();
    return this.rechecking;
  }

  /** Backends started from now on get ports from `range`; running ones keep theirs. */
  setPortRange(range: [number, number]): void {
    this.ports.setRange(range);
  }

  async scan(): Promise<ScanEntry[]> {
    const procs = this.records.all().filter((p) => !p.retired);
    if (process.platform !== 'linux') {
      return procs.map((p) => ({ pid: p.pid, command: '', cwd: p.cwd.procCwd ?? p.identity?.dir ?? '', status: p.cwd.cwd, supervised: true, backend: p.backend }));
    }
    return scanProcesses(this.options.backendsDir, procs);
  }

  /** The model's log from its file (across its processes), timestamped; reachable after its process ended. */
  async logs(model: string): Promise<LogLine[]> {
    return this.modelLogs.tail(model);
  }

  /** Whether the model has a row or a log file: what `logs` can show. */
  knows(model: string): boolean {
    return this.records.get(model) !== undefined || this.modelLogs.has(model);
  }

  // ---- internals (callers hold the model's lock where it matters) ----

  private async ensureLocked(target: BackendTarget, model: string): Promise<{ proc: Proc; reused: boolean; replaced: string | null }> {
    const existing = this.records.get(model);
    if (existing) {
      const why = await this.unusable(existing, target);
      if (why === null) return { proc: existing, reused: true, replaced: null };
      if (existing.retired) {
        // Asked for again by the user: a pending restart and the crash count give way.
        this.endings.forgive(model, target.name);
      } else {
        await this.stopping.process(existing, true);
      }
      const proc = await this.launcher.spawnReady(target, model);
      const replaced = `respawned pid ${existing.pid} → ${proc.pid}: ${why}`;
      tell(proc, replaced);
      return { proc, reused: false, replaced };
    }
    return { proc: await this.launcher.spawnReady(target, model), reused: false, replaced: null };
  }

  /** Why an existing process cannot serve target (null: it can). Asks Health, so a hung backend is not reused. */
  private async unusable(proc: Proc, target: BackendTarget): Promise<string | null> {
    if (proc.retired) return proc.exit ? `it had ${proc.state === 'exited' ? 'exited' : 'crashed'} (${endText(proc.exit)})` : 'it had ended';
    if (!(await this.intact(proc, target))) {
      if (proc.cwd.cwd === 'stale') return 'its directory was replaced';
      return proc.backend !== target.name ? `it ran backend ${proc.backend}` : `it was ${proc.state}`;
    }
    try {
      await proc.client.health(this.options.healthTimeoutMs);
      return null;
    } catch {
      return `it did not answer Health within ${this.options.healthTimeoutMs} ms`;
    }
  }

  /** Alive, ready, same backend, and (unless legacy) recorded at target.dir with the identity still there. */
  private async intact(proc: Proc, target: BackendTarget): Promise<boolean> {
    if (proc.retired || proc.state !== 'ready' || proc.backend !== target.name) return false;
    if (proc.identity && proc.identity.dir !== resolve(target.dir)) return false;
    await this.refresh(proc);
    if (proc.retired || proc.cwd.cwd === 'stale') return false;
    // Legacy entries pass on their own (gate 3), unless the OS shows their cwd is elsewhere (e.g. a backup name).
    return proc.identity !== null || proc.cwd.procCwd === null || proc.cwd.procCwd === resolve(target.dir);
  }

  /** A fresh process for a model whose process was `old` (ended or stopped), from its backend's live directory. */
  private async startAgain(old: Proc, why: string): Promise<Proc> {
    const spec = this.records.specFor(old.model, old.backend);
    let proc: Proc;
    try {
      proc = await this.launcher.spawnReady(liveTarget(this.options.backendsDir, old.backend), old.model);
    } catch (error) {
      // The row stays, saying why it could not start again.
      if (old.retired && !this.records.get(old.model)) {
        old.error = oneLineOf(error);
        this.records.put(old);
        this.records.publish(old);
      }
      throw error;
    }
    tell(proc, `${why} → pid ${proc.pid}`);
    await this.reload(proc, spec);
    return proc;
  }

  /** Loads again what the model had loaded: state loading until LoadModel answers; a failure stays on the row. */
  private async reload(proc: Proc, spec: ModelSpec): Promise<void> {
    if (!spec.load) return;
    try {
      await this.loadInto(proc, spec.load);
    } catch (error) {
      this.failLoad(proc, new HangarError('failed', `reloading model ${proc.model} failed: ${loadError(proc, error).message}`));
    }
  }

  /** LoadModel with the row in state loading, then ready with the model loaded. */
  private async loadInto(proc: Proc, request: LoadModelRequest): Promise<string> {
    proc.state = 'loading';
    this.records.publish(proc);
    const result = await proc.client.loadModel(request, this.options.loadTimeoutMs).finally(() => {
      if (!proc.retired && proc.state === 'loading') proc.state = 'ready';
    });
    if (!result.success) throw new Error(result.message);
    proc.loaded = true;
    proc.error = null;
    this.records.publish(proc);
    return result.message;
  }

  /** Puts a load failure on the row (the process runs, its model is not loaded) and returns it to throw. */
  private failLoad(proc: Proc, error: HangarError): HangarError {
    proc.loaded = false;
    proc.error = error.message;
    if (!proc.retired) this.records.publish(proc);
    return error;
  }

  /** Re-probes one process's cwd (and, for an adopted one, whether it still lives); emits on change. */
  private async refresh(proc: Proc): Promise<void> {
    if (proc.retired) return;
    if (this.endings.endedUnseen(proc)) return;
    const report = await probeCwd(proc.pid, proc.identity);
    if (proc.retired) return;
    const changed = report.cwd !== proc.cwd.cwd || report.cwdReason !== proc.cwd.cwdReason || report.procCwd !== proc.cwd.procCwd;
    proc.cwd = report;
    if (changed) this.records.publish(proc);
  }

  /** One round of the health watch: every ready or unresponsive backend is asked Health (and Status), bounded. */
  private async watchHealth(): Promise<void> {
    await Promise.all(this.records.all().filter((p) => this.watched(p)).map((p) => this.probe(p)));
  }

  /** Ready and unresponsive backends, and adopted ones not yet confirmed (a spawned one is starting for waitReady). */
  private watched(proc: Proc): boolean {
    return !proc.retired && (WATCHED.has(proc.state) || (proc.state === 'starting' && proc.result === null));
  }

  private async probe(proc: Proc): Promise<void> {
    if (this.endings.endedUnseen(proc)) return;
    const timeout = this.options.healthTimeoutMs;
    const answered = await proc.client.health(timeout).then(() => true, () => false);
    if (!this.watched(proc)) return;
    if (!answered) {
      if (proc.state === 'unresponsive') return;
      proc.state = 'unresponsive';
      proc.error = `no Health answer within ${timeout} ms`;
      this.records.publish(proc);
      return;
    }
    let changed = proc.state !== 'ready';
    if (changed) {
      proc.state = 'ready';
      proc.error = null;
    }
    // Whether the model is loaded is the backend's word. Status is optional in LocalAI's protocol: a backend that
    // does not implement it is taken at its last LoadModel answer.
    const status = await proc.client.status(timeout).catch(() => null);
    if (status && !proc.retired && proc.state === 'ready') {
      const loaded = status.state === 'READY' || status.state === 'BUSY';
      if (!loaded && proc.loaded) proc.error = `the backend reports no model loaded (Status ${status.state})`;
      if (loaded !== proc.loaded) {
        proc.loaded = loaded;
        changed = true;
      }
    }
    if (changed) this.records.publish(proc);
  }

  private scheduleRecheck(): void {
    if (this.debounce) return;
    this.debounce = setTimeout(() => {
      this.debounce = null;
      void this.recheck();
    }, WATCH_DEBOUNCE_MS);
  }

  /**
   * Re-adopts a table entry if its process is still the one recorded (pid + start time); never touches others.
   * Returns false when the recorded process is gone.
   */
  private adopt(entry: TableEntry): boolean {
    if (this.records.get(entry.model)) return true;
    if (!isSameProcess(entry.pid, entry.startTime)) return false;
    const identity = entry.dir && entry.dev && entry.ino ? { dir: entry.dir, dev: BigInt(entry.dev), ino: BigInt(entry.ino) } : null;
    this.ports.claim(entry.port);
    this.reaper?.watch(entry.pid);
    this.records.setSpec(entry.model, specOf(entry));
    // Starting: ready only once it answers Health, which start() asks before the host serves anything.
    this.records.put(newRow({
      model: entry.model,
      backend: entry.backend,
      pid: entry.pid,
      port: entry.port,
      identity,
      startedAt: entry.startedAt,
      startTime: entry.startTime,
      cwd: { cwd: 'unknown', cwdReason: 'adopted, not yet checked', procCwd: null },
      result: null,
      logs: null,
      detach: null,
      client: new BackendClient(`127.0.0.1:${entry.port}`, { token: this.options.grpcToken }),
      loaded: entry.load !== undefined,
      message: 'adopted from a previous Hangar run',
    }));
    return true;
  }

  /** Starts again, model loaded, a model whose process a previous host run left behind (dead or stopped). */
  private resurrect(entry: ModelEntry & { pid?: number }): Promise<unknown> {
    const work = () =>
      this.lock.run(entry.model, async () => {
        if (this.closed || this.records.get(entry.model)) return;
        const spec = specOf(entry);
        this.records.setSpec(entry.model, spec);
        try {
          const proc = await this.launcher.spawnReady(liveTarget(this.options.backendsDir, entry.backend), entry.model);
          tell(proc, entry.pid ? `started again: pid ${entry.pid} ended while Hangar was not running` : 'started again on launch');
          await this.reload(proc, spec);
        } catch (error) {
          this.modelLogs.of(entry.model).separator(`could not start again after a host restart: ${oneLineOf(error)}`);
        }
      });
    return this.options.backendLock ? this.options.backendLock(entry.backend, work) : work();
  }

  private loadRequest(model: string): LoadModelRequest {
    const { modelsDir } = this.options;
    return { model, modelFile: join(modelsDir, model), modelPath: modelsDir };
  }

  /** SIGTERM, then SIGKILL after the grace period, to one process Hangar did not start (the caller vetted it). */
  stopStranger(pid: number): Promise<void> {
    return this.stopping.stranger(pid);
  }

}

function loadError(proc: Proc, err: unknown): HangarError {
  if (err instanceof HangarError) return err;
  const message = err instanceof BackendCallError ? err.details : (err as Error).message;
  return new HangarError('failed', `backend ${proc.backend} could not load model ${proc.model}: ${message}`);
}
