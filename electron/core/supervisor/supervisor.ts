// The backend process supervisor. Its one promise: a process whose directory a reinstall replaced is never
// reused. Every process records the identity (dev/ino) of the directory it was started in; every reuse checks
// that identity against the path again, and on Linux against the process's own cwd.
//
// This file tells the life of one model's process; the parts beside it do each step:
//   spawn → ready        launcher.ts (its port, spawn.ts, readiness.ts; another port when its port was taken)
//   load                 loading.ts (LoadModel, again in every later process of the model); stale-load.ts
//   reuse, or stale      reuse-gates.ts (directory identity, Health); rechecks.ts (fs.watch, backstop, cwd probe)
//   unresponsive         health-watch.ts
//   respawn, stop        stopping.ts (the whole process tree; by directory before a swap); strangers.ts (the scan)
//   crash → restart      endings.ts, restart-policy.ts (backoff, crash loop)
//   host restart         adoption.ts (the saved table's live processes adopted, the others started again)
// Each model's row and what it should run as: process-records.ts, saved by table.ts. Its log: model-logs.ts.
import { EventEmitter } from 'node:events';
import { mkdir } from 'node:fs/promises';
import { HangarError, type LoadResult, type LogLine, type ProcessView, type RestartOptions, type ScanEntry } from '../../../shared/index.ts';
import { KeyedLock } from '../locks.ts';
import { currentPlatform, type Platform } from '../platform/index.ts';
import { Adoption } from './adoption.ts';
import { Cgroups, type ProcessTracking } from './cgroups.ts';
import { Endings, type SelfStart } from './endings.ts';
import { HealthWatch } from './health-watch.ts';
import { loadRuntime } from './grpc-client.ts';
import { Launcher } from './launcher.ts';
import { Loader } from './loading.ts';
import { modelConfigStartLimitMs } from './model-config.ts';
import { ModelLogs } from './model-logs.ts';
import { settingsOf, type SupervisorOptions, type SupervisorSettings } from './options.ts';
import type { PortMove } from './port-clash.ts';
import { PortPool } from './ports.ts';
import { Rechecks } from './rechecks.ts';
import { Reaper, type ParentWatch } from './reaper.ts';
import { ProcessRecords, endText, liveTarget, tell, type BackendTarget, type Proc } from './process-records.ts';
import { RestartScheduler } from './restart-policy.ts';
import { ReuseGates } from './reuse-gates.ts';
import { SmokeStart } from './smoke-start.ts';
import { loadAfterFailure, type StaleLoadParts } from './stale-load.ts';
import { Stopping, type DirectoryStop, type DirectoryStopOptions } from './stopping.ts';
import { Strangers } from './strangers.ts';
import { ProcessTable } from './table.ts';
import { StartBudget } from './start-budget.ts';
import { rowUsage } from './row-usage.ts';
import { oneLine } from '../../../shared/error-text.ts';

export type { BackendTarget, DirectoryStop, PortMove, ProcessTracking, SupervisorOptions };

/**
 * Events:
 * - 'process' (ProcessView): a process appeared or changed (state, cwd status, load, exit). A process that ends by
 *   itself stays listed as exited, crashed or crash-looping until it is started again or stopped.
 * - 'process-removed' (model: string): the model has no row any more (stopped by Hangar or the user).
 * - 'log' (LogLine): one line of a backend's stdout/stderr, or a note from Hangar.
 * - 'port-moved' (PortMove): a start (a smoke start too) lost its port while it started and is tried on another.
 */
export class Supervisor extends EventEmitter {
  private readonly options: SupervisorSettings;
  /** Each model's operations run one at a time. */
  private readonly lock = new KeyedLock();
  private readonly ports: PortPool;
  private readonly table: ProcessTable;
  private readonly records: ProcessRecords;
  private readonly modelLogs: ModelLogs;
  private readonly endings: Endings;
  private readonly stopping: Stopping;
  private readonly launcher: Launcher;
  private readonly loader: Loader;
  private readonly rechecks: Rechecks;
  private readonly gates: ReuseGates;
  private readonly health: HealthWatch;
  private readonly adoption: Adoption;
  private readonly cgroups: Cgroups;
  private readonly platform: Platform;
  private readonly smoke: SmokeStart;
  private readonly strangers: Strangers;
  private readonly budget: StartBudget;
  private readonly staleLoad: StaleLoadParts;
  private reaper: Reaper | null = null;
  private closing: Promise<void> | null = null;

  constructor(options: SupervisorOptions) {
    super();
    const o = (this.options = settingsOf(options));
    const { lock } = this;
    const budget = (this.budget = new StartBudget(o.stateDir, o.startTimeoutMs));
    const ports = (this.ports = new PortPool(o.portRange, o.portQuarantineMs));
    this.table = new ProcessTable(o.stateDir);
    const platform = (this.platform = currentPlatform());
    const parent: ParentWatch = { watch: (leader) => this.reaper?.watch(leader), unwatch: (pid) => this.reaper?.unwatch(pid) };
    // Cgroups are Linux's: under the POSIX layer a backend is found by its process group and descendants, as on macOS.
    const usage = rowUsage(platform);
    const cgroups = (this.cgroups = new Cgroups(o.backendsDir, o.cgroups && platform.name === 'linux'));
    const selfStart: SelfStart = (backend, model, work) => {
      const run = () => lock.run(model, work);
      return o.backendLock ? o.backendLock(backend, run) : run();
    };
    const records = (this.records = new ProcessRecords(this.table, usage, this, o.restartRules, (phase, backend) => budget.last(phase, backend)));
    const logs = (this.modelLogs = new ModelLogs(records, this, o.logsDir, o.logMaxBytes));
    const restarts = new RestartScheduler(o.restartRules, o.restartClock);
    const startAgain = (old: Proc, why: string) => this.startAgain(old, why);
    const endings = (this.endings = new Endings({ records, logs, ports, parent, cgroups, platform, usage, restarts, selfStart, startAgain }));
    const stopping = (this.stopping = new Stopping(records, endings, lock, cgroups, o.stopGraceMs, platform));
    const portMoved = (move: PortMove) => {
      if (move.model !== null) logs.line(move.model, null, 'stderr', `[hangar] ${move.text}`);
      this.emit('port-moved', move);
    };
    const launcher = (this.launcher = new Launcher(o, { records, logs, ports, parent, endings, stopping, cgroups, platform, budget, portMoved }));
    const loader = (this.loader = new Loader(records, o.modelsDir, budget));
    this.rechecks = new Rechecks(records, endings, platform);
    this.strangers = new Strangers(records, stopping, o.backendsDir, platform);
    this.gates = new ReuseGates(this.rechecks, o.healthTimeoutMs);
    this.health = new HealthWatch(records, endings, o.healthTimeoutMs);
    this.smoke = new SmokeStart({ launcher, ports, parent, cgroups, platform, grpcToken: o.grpcToken, budget, stopGraceMs: o.stopGraceMs, portMoved });
    this.staleLoad = { rechecks: this.rechecks, stopping, launcher, loader, logs };
    this.adoption = new Adoption({ records, logs, ports, parent, cgroups, platform, launcher, loader, selfStart, backendsDir: o.backendsDir, grpcToken: o.grpcToken });
  }

  /**
   * Loads the table, re-adopts the backends a previous host left running, starts watching, then starts again (model
   * reloaded) those that died meanwhile and whose policy says so. `restore`: start again what ran when the last host
   * closed too (default: the restoreOnStart option). `again`: models to start again whatever their policy (those a
   * swap stopped that the last host did not live to finish).
   */
  async start(options: { restore?: boolean; again?: string[] } = {}): Promise<void> {
    const restoreOnStart = options.restore ?? this.options.restoreOnStart;
    await mkdir(this.options.backendsDir, { recursive: true });
    await Promise.all([this.cgroups.detect(), this.budget.ready()]);
    this.reaper = new Reaper(this.cgroups.root, this.platform.name);
    const again = await this.adoption.adoptSaved(await this.table.load(), restoreOnStart, new Set(options.again));
    await this.cgroups.sweep(new Set(this.records.all().map((p) => p.cgroup ?? '')));
    this.records.persist();
    await this.rechecks.start(this.options.backendsDir, this.options.backstopMs);
    await this.health.start(this.options.healthEveryMs);
    this.adoption.restore(again);
  }

  /**
   * Makes ready what a start needs, which the host leaves out of its own start so it serves sooner: gRPC and the
   * backend protocol, the process library, and a shell waiting to become the next backend. A host calls it once it
   * serves and is idle; the first load then costs what every later one does.
   */
  async warmUp(): Promise<void> {
    await Promise.all([loadRuntime(), import('execa')]);
    this.launcher.refill();
  }

  /**
   * stopAll: stop every backend. Otherwise leave them running for the next host run to re-adopt (the reaper is
   * released, so they survive this host's exit; see reaper.ts for what that costs).
   */
  close(options: { stopAll: boolean }): Promise<void> {
    // Once: a second call waits for the first and changes nothing (what the first left running stays so).
    this.closing ??= this.closeOnce(options);
    return this.closing;
  }

  private async closeOnce(options: { stopAll: boolean }): Promise<void> {
    this.rechecks.stop();
    this.health.stop();
    this.endings.close();
    await Promise.all([this.adoption.close(), this.smoke.close(), this.launcher.close()]);
    if (options.stopAll) {
      // By model, not by row: a halt waits for the model's lock, so a restart between two processes is stopped too.
      await Promise.all(this.records.models().map((model) => this.stopping.halt(model)));
    } else {
      this.records.handOver();
      for (const proc of this.records.all()) {
        proc.client.close();
        proc.detach?.();
      }
    }
    await this.reaper?.release();
    this.ports.close();
    await this.rechecks.idle();
    await this.table.flush();
    await this.modelLogs.flush();
    await this.budget.flush();
  }

  /** How this host finds all of a backend's processes: a cgroup of each one's own, or its group and session. */
  get tracking(): ProcessTracking {
    return this.platform.tracking ?? this.cgroups.tracking;
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
    return proc !== undefined && (await this.gates.intact(proc, target));
  }

  /** Gate 2: reuse an intact process, else force-stop whatever runs for the model and spawn into target.dir. */
  ensureRunning(target: BackendTarget, model: string): Promise<{ process: ProcessView; reused: boolean }> {
    return this.lock.run(model, async () => {
      const spec = this.records.specFor(model, target.name);
      const { proc, reused } = await this.ensureLocked(target, model, spec.load !== null);
      if (!reused) {
        await this.loader.reload(proc, spec);
        await this.records.persisted();
      }
      return { process: this.records.view(proc), reused };
    });
  }

  /**
   * ensureRunning + LoadModel; the load is remembered, so every later process of the model loads it again.
   * Gate 6 (stale-load.ts): a failure from a stale cwd is explained, respawned and retried once. Without a start
   * timeout of its own, the model's LocalAI config in the models directory may give it one (grpc.attempts ×
   * attempts_sleep_time).
   */
  load(target: BackendTarget, model: string, options: RestartOptions = {}): Promise<LoadResult> {
    return this.lock.run(model, async () => {
      const configured = options.startTimeoutMs === undefined ? await modelConfigStartLimitMs(this.options.modelsDir, model) : null;
      const spec = this.records.specFor(model, target.name, configured === null ? options : { ...options, startTimeoutMs: configured });
      const request = this.loader.request(model);
      const { proc, reused, replaced } = await this.ensureLocked(target, model, true);
      const loaded = await this.loader.into(proc, request).then(
        (message) => ({ proc, message: replaced ? `${replaced}; ${message}` : message, reused }),
        async (failure: unknown) => ({ ...(await loadAfterFailure(this.staleLoad, proc, target, request, failure)), reused: false }),
      );
      await this.records.remember(spec, request);
      return { pid: loaded.proc.pid, port: loaded.proc.port, reused: loaded.reused, message: loaded.message };
    });
  }

  /** Re-checks every process's cwd now; emits 'process' for each one whose status changed. Coalesces calls. */
  recheck(): Promise<void> {
    return this.rechecks.recheck();
  }

  /** Forced stop and a fresh spawn from join(backendsDir, backend), its model loaded again. */
  respawn(model: string): Promise<ProcessView> {
    return this.lock.run(model, async () => {
      const proc = this.records.get(model);
      if (!proc) throw new HangarError('not-found', `no backend process runs for model ${model}`);
      await this.stopping.process(proc, true);
      return this.records.view(await this.startAgain(proc, `respawned pid ${proc.pid}`, true));
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
  stopByDirectory(dir: string, options: DirectoryStopOptions = {}): Promise<DirectoryStop> {
    return this.stopping.directory(dir, options);
  }

  /** Gate 5, after a swap: runs each model again from its backend's new live directory, ready, its model reloaded. */
  async respawnAll(list: Array<{ model: string; backend: string }>): Promise<ProcessView[]> {
    // Every respawn settles before this answers, so a caller that undoes a swap on failure races no spawn.
    const results = await Promise.allSettled(list.map(({ model, backend }) => this.ensureRunning(liveTarget(this.options.backendsDir, backend), model)));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    return results.map((r) => (r as PromiseFulfilledResult<{ process: ProcessView }>).value.process);
  }

  /**
   * Gate 5 where nothing ran to respawn: starts the backend at target.dir once, until it answers Health, and stops it
   * again (`stopped`: once it is gone); rejects saying how it failed ("the new build exited with code 7 before it
   * answered Health: ...").
   */
  smokeStart(target: BackendTarget): Promise<{ stopped: Promise<void> }> {
    return this.smoke.run(target);
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

  /**
   * The user's stop: Free (unless forced), SIGTERM to the process group, SIGKILL after the grace period, reap. The row
   * goes, and so does what the model should run as (a crashed row is only removed).
   */
  stop(model: string, options: { force?: boolean } = {}): Promise<void> {
    const cancelling = this.cancelStart(model);
    return this.lock.run(model, async () => {
      await cancelling;
      this.endings.cancelRestart(model);
      this.records.dropSpec(model);
      const proc = this.records.get(model);
      if (proc?.retired) this.records.removeRow(proc);
      else if (proc) await this.stopping.process(proc, options.force ?? false);
      await this.records.persisted();
    });
  }

  /**
   * A start or a LoadModel may take minutes, and holds the model's lock meanwhile: a stop does not wait behind it.
   * The process ends now, and the start fails saying a stop cancelled it.
   */
  private cancelStart(model: string): Promise<void> | null {
    const proc = this.records.get(model);
    if (!proc || proc.retired || proc.deadline === null) return null;
    proc.cancelled = proc.state === 'loading' ? 'loading' : 'starting';
    return this.stopping.process(proc, true);
  }

  /** Free: the backend drops the model from memory and keeps running; the row says so until the next load. */
  unload(model: string): Promise<ProcessView> {
    return this.lock.run(model, async () => {
      const proc = this.records.get(model);
      if (!proc || proc.retired) throw new HangarError('not-found', `no backend process runs for model ${model}`);
      await this.loader.free(proc);
      return this.records.view(proc);
    });
  }

  /** The processes running from the backends directory, Hangar's own and others. */
  scan(): Promise<ScanEntry[]> {
    return this.strangers.scan();
  }

  /** See Strangers.stoppable: never an arbitrary pid. */
  stoppable(pid: number): Promise<{ entry: ScanEntry; model: string | null }> {
    return this.strangers.stoppable(pid);
  }

  /** Stops one process Hangar did not start, once stoppable() vetted it. */
  stopStranger(pid: number): Promise<void> {
    return this.strangers.stop(pid);
  }

  /** How long a start and a LoadModel may take at least, from now on: the node's start-timeout, and backends' own. */
  setStartTimeout(ms: number, perBackendMs: Record<string, number> = {}): void {
    this.budget.setTimeout(ms, perBackendMs);
  }

  /** Backends started from now on get ports from `range`; running ones keep theirs. */
  setPortRange(range: [number, number]): void {
    this.ports.setRange(range);
  }

  /** The model's log from its file (across its processes), timestamped; reachable after its process ended. */
  logs(model: string): Promise<LogLine[]> {
    return this.modelLogs.tail(model);
  }

  /** Whether the model has a row or a log file: what `logs` can show. */
  knows(model: string): boolean {
    return this.records.get(model) !== undefined || this.modelLogs.has(model);
  }

  // ---- the two ways to a fresh process (callers hold the model's lock) ----

  /** The model's process if the gates let it serve target; else a fresh one from target.dir, saying what it replaced. */
  private async ensureLocked(target: BackendTarget, model: string, loadFollows: boolean): Promise<{ proc: Proc; reused: boolean; replaced: string | null }> {
    const existing = this.records.get(model);
    if (!existing) return { proc: await this.launcher.spawnReady(target, model, loadFollows), reused: false, replaced: null };
    const why = await this.gates.unusable(existing, target);
    if (why === null) return { proc: existing, reused: true, replaced: null };
    if (existing.retired) this.endings.forgive(model, target.name);
    else await this.stopping.process(existing, true);
    const proc = await this.launcher.spawnReady(target, model, loadFollows, true);
    const replaced = `respawned pid ${existing.pid} → ${proc.pid}: ${why}`;
    tell(proc, replaced);
    return { proc, reused: false, replaced };
  }

  /** A fresh process for a model whose process was `old` (ended or stopped), from its backend's live directory. */
  private async startAgain(old: Proc, why: string, respawn = false): Promise<Proc> {
    const spec = this.records.specFor(old.model, old.backend);
    let proc: Proc;
    try {
      proc = await this.launcher.spawnReady(liveTarget(this.options.backendsDir, old.backend), old.model, spec.load !== null, respawn);
    } catch (error) {
      // The row stays, saying why it could not start again.
      if (old.retired && !this.records.get(old.model)) {
        old.error = oneLine(error);
        this.records.put(old);
        this.records.publish(old);
      }
      throw error;
    }
    tell(proc, `${why} → pid ${proc.pid}`);
    await this.loader.reload(proc, spec);
    return proc;
  }
}
