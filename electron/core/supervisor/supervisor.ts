// The backend process supervisor. Its one promise: a process whose directory a reinstall replaced is never
// reused. Every process records the identity (dev/ino) of the directory it was started in; every reuse checks
// that identity against the path again, and on Linux against the process's own cwd.
import { EventEmitter } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
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
import { BackendClient, BackendCallError, type LoadModelRequest } from './grpc-client.ts';
import { dirIdentity, isAlive, isSameProcess, procStat, sameInode, } from './identity.ts';
import { LogRing } from './log-ring.ts';
import { LOG_MAX_BYTES, ModelLog } from './model-log.ts';
import { reclaimPort } from './port-reuse.ts';
import { PortPool, portIsFree } from './ports.ts';
import { NotReadyError, waitReady } from './readiness.ts';
import { Reaper } from './reaper.ts';
import { processTree, signalTree, treeAlive } from './process-tree.ts';
import { processesInDirectory, readCommand, scanProcesses } from './scan.ts';
import { backendEnv } from './backend-env.ts';
import { spawnBackend } from './spawn.ts';
import { DEFAULT_RESTART_RULES, RestartScheduler, type RestartRules } from './restart-policy.ts';
import { ProcessTable, type ModelEntry, type TableEntry } from './table.ts';
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
import { UsageSampler } from './usage.ts';

export type { BackendTarget };

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

/** What a stop before a swap did: the supervised processes it stopped, and the others it found and left running. */
export interface DirectoryStop {
  stopped: Array<{ model: string; backend: string }>;
  leftRunning: Array<{ pid: number; command: string }>;
}

const FREE_LIMIT_MS = 5000;
const WATCH_DEBOUNCE_MS = 2;
const ADOPTED_EXIT_POLL_MS = 10;
const STDERR_TAIL_LINES = 5;
const LOG_TAIL_LINES = 1000;
const PORT_ATTEMPTS = 3;
const DRAIN_LIMIT_MS = 500;
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
  private readonly modelLogs = new Map<string, ModelLog>();
  private readonly lock = new KeyedLock();
  private readonly ports: PortPool;
  private readonly table: ProcessTable;
  private readonly restarts: RestartScheduler;
  private readonly usage = new UsageSampler();
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
    this.restarts = new RestartScheduler(this.options.restartRules);
    this.records = new ProcessRecords(this.table, this.usage, this);
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
    this.restarts.close();
    await this.restoring;
    if (options.stopAll) {
      await Promise.all([...this.records.all().map((p) => p.model)].map((model) => this.halt(model)));
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
    await Promise.all([...this.modelLogs.values()].map((log) => log.flush()));
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
        await this.stopLocked(proc, true);
        const fresh = await this.spawnReady(target, model).catch((err: Error) => {
          throw new HangarError('failed', `${why}; the respawn failed: ${err.message}`);
        });
        this.note(fresh, `${why}; respawned from ${target.dir}`);
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
      this.restarts.cancel(model);
      this.records.dropSpec(model);
      const proc = this.records.get(model);
      if (!proc) return;
      if (proc.retired) this.records.removeRow(proc);
      else await this.stopLocked(proc, options.force ?? false);
      this.records.persist();
    });
  }

  /** Forced stop and a fresh spawn from join(backendsDir, backend), its model loaded again. */
  respawn(model: string): Promise<ProcessView> {
    return this.lock.run(model, async () => {
      const proc = this.records.get(model);
      if (!proc) throw new HangarError('not-found', `no backend process runs for model ${model}`);
      await this.stopLocked(proc, true);
      return this.records.view(await this.startAgain(proc, `respawned pid ${proc.pid}`));
    });
  }

  /** Starts a model whose process ended (or runs) again, its model reloaded; clears a crash loop. */
  restart(model: string): Promise<ProcessView> {
    return this.lock.run(model, async () => {
      const proc = this.records.get(model);
      if (!proc) throw new HangarError('not-found', `no backend process for model ${model}`);
      this.restarts.cancel(model);
      this.records.specFor(model, proc.backend).ends = [];
      const how = proc.retired ? (proc.exit ? endText(proc.exit) : 'ended') : 'was running';
      if (!proc.retired) await this.stopLocked(proc, true);
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
    const target = await dirIdentity(resolve(dir));
    const running = process.platform === 'linux' ? processesInDirectory(resolve(dir), target) : new Set<number>();
    const supervised = this.records.all().filter((p) =>
      !p.retired && (p.identity ? target !== null && sameInode(p.identity, target) : running.has(p.pid)),
    );
    // A supervised backend's own descendants are stopped with it, not reported as someone else's.
    const ours = new Set(this.records.all().map((p) => p.pid));
    for (const p of supervised) for (const member of processTree(p.pid, { group: true })) ours.add(member.pid);
    const strangers = [...running].filter((pid) => !ours.has(pid) && pid !== process.pid);
    const leftRunning = options.stopUnsupervised ? [] : strangers.map((pid) => ({ pid, command: readCommand(pid) }));
    await Promise.all([
      ...supervised.map((p) => this.halt(p.model)),
      ...(options.stopUnsupervised ? strangers.map((pid) => this.stopStranger(pid)) : []),
    ]);
    return { stopped: supervised.map((p) => ({ model: p.model, backend: p.backend })), leftRunning };
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
    const lines = await this.logFor(model).tail(LOG_TAIL_LINES);
    const proc = this.records.get(model);
    if (proc && !proc.logs && !proc.retired) {
      const text = `later output unavailable: backend ${proc.backend} (pid ${proc.pid}) was adopted from a previous Hangar run and has no pipes`;
      lines.push({ model, stream: 'stderr', text, at: new Date().toISOString() });
    }
    return lines;
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
        this.restarts.cancel(model);
        this.records.specFor(model, target.name).ends = [];
      } else {
        await this.stopLocked(existing, true);
      }
      const proc = await this.spawnReady(target, model);
      const replaced = `respawned pid ${existing.pid} → ${proc.pid}: ${why}`;
      tell(proc, replaced);
      return { proc, reused: false, replaced };
    }
    return { proc: await this.spawnReady(target, model), reused: false, replaced: null };
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
      proc = await this.spawnReady(liveTarget(this.options.backendsDir, old.backend), old.model);
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

  /**
   * Spawns and waits for readiness. The port range may overlap the OS's ephemeral ports, so an outgoing connection
   * can take a port between the pool's bind check and the backend's listen: a backend that dies during startup
   * while its port is no longer free is retried on another port.
   */
  private async spawnReady(target: BackendTarget, model: string): Promise<Proc> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.spawnOnce(target, model, attempt === 1);
      } catch (err) {
        if (!(err instanceof PortTaken) || attempt === PORT_ATTEMPTS) throw err instanceof PortTaken ? err.error : err;
      }
    }
  }

  private async spawnOnce(target: BackendTarget, model: string, preferOldPort: boolean): Promise<Proc> {
    const spec = this.records.specFor(model, target.name);
    const { port, moved } = await this.portFor(spec, preferOldPort);
    const logs = new LogRing();
    const modelLog = this.logFor(model);
    const spawned = await spawnBackend({
      backend: target.name,
      model,
      dir: resolve(target.dir),
      port,
      env: { ...(await backendEnv(target.dir, this.options.modelsDir)), ...this.options.runtimeEnv, LOCALAI_GRPC_AUTH_TOKEN: this.options.grpcToken },
      onLine: (stream, text) => {
        const line: LogLine = { model, stream, text, at: new Date().toISOString() };
        logs.push(line);
        modelLog.write(line);
        this.emit('log', line);
      },
    }).catch((err: unknown) => {
      this.ports.release(port);
      throw err;
    });
    const restarted = this.records.get(model) !== undefined || spec.port !== null;
    if (restarted) spec.restarts++;
    spec.port = port;
    const startedAt = new Date().toISOString();
    modelLog.separator(`${restarted ? 'restart' : 'start'}: pid ${spawned.pid}, backend ${target.name}, port ${port}`, startedAt);
    const proc = newRow({
      model,
      backend: target.name,
      pid: spawned.pid,
      port,
      identity: spawned.identity,
      startedAt,
      startTime: spawned.startTime,
      cwd: { cwd: 'ok', cwdReason: 'directory intact', procCwd: spawned.identity.dir },
      result: spawned.result,
      logs,
      detach: spawned.detach,
      client: new BackendClient(`127.0.0.1:${port}`, { token: this.options.grpcToken }),
      loaded: false,
      message: moved,
    });
    this.reaper?.watch(proc.pid);
    this.records.put(proc);
    this.records.persist();
    this.records.publish(proc);

    const died = new AbortController();
    void spawned.exit.then((how) => {
      // On its exit, not once its pipes close: until then, what answers on its port may be someone else.
      died.abort();
      if (proc.stopping) return;
      // What it forked may still hold its pipes (and its port): the group goes with its leader.
      signalGroup(proc.pid, 'SIGKILL');
      if (proc.state !== 'starting') this.ended(proc, how);
    });
    void spawned.result.then(() => this.retire(proc));
    try {
      await waitReady(port, proc.client, Date.now() + this.options.startTimeoutMs, died.signal);
      // A Health answer that arrived after the process exited came from someone else on its port.
      died.signal.throwIfAborted();
    } catch (err) {
      if (!(err instanceof NotReadyError)) {
        // The last lines may still be in the pipe; a child that inherited it must not hold the error back long.
        await Promise.race([spawned.drained, delay(DRAIN_LIMIT_MS)]);
        const error = startupDeath(proc, await spawned.exit);
        // A clash may be over by the time it is checked: what the backend said decides as well as the port now.
        throw saidPortInUse(proc) || !(await portIsFree(port)) ? new PortTaken(error) : error;
      }
      await this.stopLocked(proc, true);
      throw new HangarError('failed', `backend ${proc.backend} did not become ready for model ${model} within ${this.options.startTimeoutMs} ms: ${err.lastAnswer}`);
    }
    proc.state = 'ready';
    this.records.publish(proc);
    return proc;
  }

  /** The model's previous port when it is free again (a client pinned to it keeps working), else a new one. */
  private async portFor(spec: ModelSpec, preferOld: boolean): Promise<{ port: number; moved: string | null }> {
    const old = spec.port;
    if (old !== null && preferOld && (await reclaimPort(this.ports, old))) return { port: old, moved: null };
    const port = await this.ports.allocate();
    return { port, moved: old !== null && old !== port ? `moved from port ${old} to ${port}: ${old} is in use` : null };
  }

  private async stopLocked(proc: Proc, force: boolean): Promise<void> {
    if (proc.retired) return;
    proc.stopping = true;
    // A backend that does not answer Health would not answer Free either: straight to the signals.
    const answers = proc.state !== 'unresponsive';
    proc.state = 'stopping';
    this.records.publish(proc);
    if (!force && answers) await proc.client.free(FREE_LIMIT_MS).catch(() => undefined);
    // Read before the first signal, so descendants that left the group (setsid) are found and stopped too. Only
    // while the pid is still this process (or names no process: then its group, if any, is still ours).
    const tree = isSameProcess(proc.pid, proc.startTime) || !procStat(proc.pid) ? processTree(proc.pid, { group: true }) : [];
    const deadline = Date.now() + this.options.stopGraceMs;
    signalGroup(proc.pid, 'SIGTERM');
    signalTree(tree, 'SIGTERM');
    const gone = proc.result ?? waitForExit(() => !isSameProcess(proc.pid, proc.startTime));
    const inTime = (await settlesWithin(gone, this.options.stopGraceMs)) && (await waitUntil(() => treeAlive(tree).length === 0, deadline));
    if (!inTime) {
      signalGroup(proc.pid, 'SIGKILL');
      signalTree(tree, 'SIGKILL');
    }
    await gone;
    // Members of the group and of the tree that outlived its leader (a backend's own children) go too.
    if (proc.result) signalGroup(proc.pid, 'SIGKILL');
    signalTree(tree, 'SIGKILL');
    this.retire(proc);
  }

  /** Stops a model's process and keeps what it should run as (a swap, a host closing): its row goes. */
  private halt(model: string): Promise<void> {
    return this.lock.run(model, async () => {
      const proc = this.records.get(model);
      if (proc?.retired) this.records.removeRow(proc);
      else if (proc) await this.stopLocked(proc, false);
    });
  }

  /** Frees a process's resources once it has ended; the row itself stays until removeRow. */
  private release(proc: Proc): void {
    proc.retired = true;
    proc.client.close();
    this.ports.release(proc.port);
    this.reaper?.unwatch(proc.pid);
    this.usage.forget(proc.pid);
  }

  /** Removes a process Hangar stopped (or one that died while starting): exited, then removed. */
  private retire(proc: Proc): void {
    if (proc.retired) return;
    this.release(proc);
    this.logFor(proc.model).separator(`pid ${proc.pid} ${proc.stopping ? 'stopped by Hangar' : 'exited while starting'}`);
    proc.state = 'exited';
    this.records.removeRow(proc);
  }


  /** A process ended. Unless Hangar stopped it (or it died starting), its row stays with how it ended. */
  private ended(proc: Proc, how: { code: number | null; signal: string | null }): void {
    if (proc.retired || this.records.isHandedOver) return;
    if (proc.stopping || proc.state === 'starting') return this.retire(proc);
    this.release(proc);
    const failed = how.code !== 0 || how.signal !== null;
    const tail = (proc.logs?.toArray() ?? []).filter((l) => l.stream === 'stderr').slice(-STDERR_TAIL_LINES).map((l) => l.text);
    proc.exit = { ...how, at: new Date().toISOString(), tail };
    proc.state = failed ? 'crashed' : 'exited';
    proc.loaded = false;
    this.logFor(proc.model).separator(`pid ${proc.pid} ${endText(proc.exit)}`, proc.exit.at);
    this.records.persist();
    this.applyPolicy(proc, failed);
    this.records.publish(proc);
  }

  /** Schedules a restart after the backoff, or marks a crash loop, as the model's policy says. */
  private applyPolicy(proc: Proc, failed: boolean): void {
    const spec = this.records.spec(proc.model);
    if (!spec) return;
    const verdict = this.restarts.afterEnd(proc.model, spec.policy, failed, spec.ends, () => void this.autoRestart(proc));
    if (!verdict) return;
    if ('restartInMs' in verdict) {
      proc.message = `restarting in ${formatMs(verdict.restartInMs)} (policy ${spec.policy})`;
    } else if (verdict.stay === 'loop') {
      proc.state = 'crash-looping';
      const { windowMs } = this.restarts.rules;
      proc.error = `ended ${verdict.ends} times within ${Math.round(windowMs / 1000)} s: left stopped (last: ${endText(proc.exit!)})`;
    }
  }

  private autoRestart(old: Proc): Promise<void> {
    const work = () =>
      this.lock.run(old.model, async () => {
        if (this.restarts.closed || this.records.get(old.model) !== old || !this.records.spec(old.model)) return;
        try {
          await this.startAgain(old, `restarted after pid ${old.pid} ${endText(old.exit!)}`);
        } catch {
          // The failed start counts as another end of the model.
          if (this.records.get(old.model) === old) {
            old.exit = { ...old.exit!, at: new Date().toISOString() };
            this.applyPolicy(old, true);
            this.records.publish(old);
          }
        }
      });
    return this.options.backendLock ? this.options.backendLock(old.backend, work) : work();
  }

  /** Re-probes one process's cwd (and, for an adopted one, whether it still lives); emits on change. */
  private async refresh(proc: Proc): Promise<void> {
    if (proc.retired) return;
    if (!proc.result && !isSameProcess(proc.pid, proc.startTime)) return this.ended(proc, { code: null, signal: null });
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
    if (!proc.result && !isSameProcess(proc.pid, proc.startTime)) return this.ended(proc, { code: null, signal: null });
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
          const proc = await this.spawnReady(liveTarget(this.options.backendsDir, entry.backend), entry.model);
          tell(proc, entry.pid ? `started again: pid ${entry.pid} ended while Hangar was not running` : 'started again on launch');
          await this.reload(proc, spec);
        } catch (error) {
          this.logFor(entry.model).separator(`could not start again after a host restart: ${oneLineOf(error)}`);
        }
      });
    return this.options.backendLock ? this.options.backendLock(entry.backend, work) : work();
  }

  private logFor(model: string): ModelLog {
    let log = this.modelLogs.get(model);
    if (!log) {
      log = new ModelLog(this.options.logsDir, model, this.options.logMaxBytes, (error) => {
        const text = `[hangar] cannot write the log file of ${model} (${error.message}); its output is no longer kept on disk`;
        const line: LogLine = { model, stream: 'stderr', text, at: new Date().toISOString() };
        this.records.get(model)?.logs?.push(line);
        this.emit('log', line);
      });
      this.modelLogs.set(model, log);
    }
    return log;
  }

  private loadRequest(model: string): LoadModelRequest {
    const { modelsDir } = this.options;
    return { model, modelFile: join(modelsDir, model), modelPath: modelsDir };
  }

  /** A line from Hangar itself in the process's log, so the log tells why the process replaced another. */
  private note(proc: Proc, text: string): void {
    const line: LogLine = { model: proc.model, stream: 'stderr', text: `[hangar] ${text}`, at: new Date().toISOString() };
    proc.logs?.push(line);
    this.logFor(proc.model).write(line);
    this.emit('log', line);
  }

  /** SIGTERM, then SIGKILL after the grace period, to one process Hangar did not start (the caller vetted it). */
  async stopStranger(pid: number): Promise<void> {
    signalProcess(pid, 'SIGTERM');
    const gone = waitForExit(() => !isAlive(pid));
    if (!(await settlesWithin(gone, this.options.stopGraceMs))) signalProcess(pid, 'SIGKILL');
    await gone;
  }
}

/** A startup death whose port someone else holds now: worth another try on another port. */
class PortTaken extends Error {
  constructor(readonly error: HangarError) {
    super(error.message);
  }
}

function formatMs(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
}

function loadError(proc: Proc, err: unknown): HangarError {
  if (err instanceof HangarError) return err;
  const message = err instanceof BackendCallError ? err.details : (err as Error).message;
  return new HangarError('failed', `backend ${proc.backend} could not load model ${proc.model}: ${message}`);
}

const PORT_IN_USE = /address already in use|EADDRINUSE|bind\(\) failed|Failed to add port|port .* (is )?(already )?in use/i;

/** True when the backend's last words on stderr say its port was taken. */
function saidPortInUse(proc: Proc): boolean {
  return (proc.logs?.toArray() ?? []).slice(-STDERR_TAIL_LINES).some((l) => l.stream === 'stderr' && PORT_IN_USE.test(l.text));
}

function startupDeath(proc: Proc, exit: { code: number | null; signal: string | null }): HangarError {
  const tail = (proc.logs?.toArray() ?? []).filter((l) => l.stream === 'stderr').slice(-STDERR_TAIL_LINES).map((l) => l.text);
  const how = exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
  const said = tail.length ? `: ${tail.join(' | ')}` : ' without output';
  return new HangarError('failed', `backend ${proc.backend} exited while starting for model ${proc.model} (${how})${said}`);
}

/** Signals a process group; falls back to the lone process when pid leads no group (a legacy entry). */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    signalProcess(pid, signal);
  }
}

function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

async function waitForExit(gone: () => boolean): Promise<void> {
  while (!gone()) await delay(ADOPTED_EXIT_POLL_MS);
}

/** Polls `done` until it holds (true) or the deadline passes (false). */
async function waitUntil(done: () => boolean, deadline: number): Promise<boolean> {
  while (!done()) {
    if (Date.now() >= deadline) return false;
    await delay(ADOPTED_EXIT_POLL_MS);
  }
  return true;
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = delay(ms, false, { ref: false });
  return Promise.race([promise.then(() => true), timer]);
}
