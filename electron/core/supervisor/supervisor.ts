// The backend process supervisor. Its one promise: a process whose directory a reinstall replaced is never
// reused. Every process records the identity (dev/ino) of the directory it was started in; every reuse checks
// that identity against the path again, and on Linux against the process's own cwd.
import { EventEmitter } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Result } from 'execa';
import { HangarError, type LoadResult, type LogLine, type ProcessState, type ProcessView, type ScanEntry } from '../../../shared/index.ts';
import { KeyedLock } from '../locks.ts';
import { probeCwd, type CwdReport } from './cwd-probe.ts';
import { BackendClient, BackendCallError } from './grpc-client.ts';
import { dirIdentity, isAlive, isSameProcess, procStat, sameInode, type DirIdentity } from './identity.ts';
import { LogRing } from './log-ring.ts';
import { PortPool, portIsFree } from './ports.ts';
import { NotReadyError, waitReady } from './readiness.ts';
import { Reaper } from './reaper.ts';
import { processTree, signalTree, treeAlive } from './process-tree.ts';
import { processesInDirectory, readCommand, scanProcesses } from './scan.ts';
import { backendEnv } from './backend-env.ts';
import { spawnBackend } from './spawn.ts';
import { ProcessTable, type TableEntry } from './table.ts';

export interface BackendTarget {
  name: string;
  /** The backend's live directory (absolute). */
  dir: string;
}

export interface SupervisorOptions {
  backendsDir: string;
  modelsDir: string;
  stateDir: string;
  /** e.g. { HANGAR_NODE: process.execPath } (+ ELECTRON_RUN_AS_NODE in Electron). */
  runtimeEnv: Record<string, string>;
  grpcToken?: string;
  portRange?: [number, number];
  portQuarantineMs?: number;
  stopGraceMs?: number;
  startTimeoutMs?: number;
  backstopMs?: number;
}

/** What a stop before a swap did: the supervised processes it stopped, and the others it found and left running. */
export interface DirectoryStop {
  stopped: Array<{ model: string; backend: string }>;
  leftRunning: Array<{ pid: number; command: string }>;
}

interface Proc {
  model: string;
  backend: string;
  pid: number;
  port: number;
  /** null: a legacy table entry without a recorded directory. */
  identity: DirIdentity | null;
  startedAt: string;
  startTime: string | null;
  state: ProcessState;
  cwd: CwdReport;
  /** Settles when a process this host spawned has exited and been reaped; null for an adopted process. */
  result: Promise<Result> | null;
  logs: LogRing | null;
  /** Lets the host exit while a process it spawned keeps running; null for an adopted process. */
  detach: (() => void) | null;
  client: BackendClient;
  retired: boolean;
}

const FREE_LIMIT_MS = 5000;
const LOAD_LIMIT_MS = 10 * 60_000;
const WATCH_DEBOUNCE_MS = 2;
const ADOPTED_EXIT_POLL_MS = 10;
const STDERR_TAIL_LINES = 5;
const PORT_ATTEMPTS = 3;
const DRAIN_LIMIT_MS = 500;

/**
 * Events:
 * - 'process' (ProcessView): a process appeared or changed (state, cwd status). When a process ends, one last
 *   'process' event carries state 'exited', immediately followed by 'process-removed'.
 * - 'process-removed' (model: string): the model has no process any more.
 * - 'log' (LogLine): one line of a backend's stdout/stderr.
 */
export class Supervisor extends EventEmitter {
  private readonly options: Required<Omit<SupervisorOptions, 'grpcToken'>> & { grpcToken?: string };
  private readonly procs = new Map<string, Proc>();
  private readonly lock = new KeyedLock();
  private readonly ports: PortPool;
  private readonly table: ProcessTable;
  private reaper: Reaper | null = null;
  private watcher: FSWatcher | null = null;
  private backstop: NodeJS.Timeout | null = null;
  private debounce: NodeJS.Timeout | null = null;
  private rechecking: Promise<void> | null = null;
  private recheckAgain = false;

  constructor(options: SupervisorOptions) {
    super();
    this.options = {
      // Below Linux's ephemeral range (32768+), so an outgoing connection never takes a backend's port.
      portRange: [30100, 30999],
      portQuarantineMs: 60_000,
      stopGraceMs: 3000,
      startTimeoutMs: 60_000,
      backstopMs: 15_000,
      ...options,
      backendsDir: resolve(options.backendsDir),
      modelsDir: resolve(options.modelsDir),
      stateDir: resolve(options.stateDir),
    };
    this.ports = new PortPool(this.options.portRange, this.options.portQuarantineMs);
    this.table = new ProcessTable(this.options.stateDir);
  }

  /** Loads the table, re-adopts the backends a previous host left running, and starts watching. */
  async start(): Promise<void> {
    await mkdir(this.options.backendsDir, { recursive: true });
    this.reaper = new Reaper();
    for (const entry of await this.table.load()) this.adopt(entry);
    this.persist();
    await this.recheck();
    this.watcher = watch(this.options.backendsDir, () => this.scheduleRecheck());
    this.watcher.on('error', () => undefined);
    this.backstop = setInterval(() => void this.recheck(), this.options.backstopMs).unref();
  }

  /**
   * stopAll: stop every backend. Otherwise leave them running for the next host run to re-adopt (the reaper is
   * released, so they survive this host's exit; see reaper.ts for what that costs).
   */
  async close(options: { stopAll: boolean }): Promise<void> {
    this.watcher?.close();
    if (this.backstop) clearInterval(this.backstop);
    if (this.debounce) clearTimeout(this.debounce);
    if (options.stopAll) {
      await Promise.all([...this.procs.keys()].map((model) => this.stop(model)));
    } else {
      for (const proc of this.procs.values()) {
        proc.client.close();
        proc.detach?.();
      }
    }
    await this.reaper?.release();
    this.ports.close();
    await this.rechecking;
    await this.table.flush();
  }

  list(): ProcessView[] {
    return [...this.procs.values()].map(view);
  }

  get(model: string): ProcessView | null {
    const proc = this.procs.get(model);
    return proc ? view(proc) : null;
  }

  /** Gate 1: the model's process may serve `target` only if it is alive and its recorded directory is intact. */
  async matches(target: BackendTarget, model: string): Promise<boolean> {
    const proc = this.procs.get(model);
    return proc !== undefined && (await this.intact(proc, target));
  }

  /** Gate 2: reuse an intact process, else force-stop whatever runs for the model and spawn into target.dir. */
  ensureRunning(target: BackendTarget, model: string): Promise<{ process: ProcessView; reused: boolean }> {
    return this.lock.run(model, async () => {
      const { proc, reused } = await this.ensureLocked(target, model);
      return { process: view(proc), reused };
    });
  }

  /** ensureRunning + LoadModel. Gate 6: a failure from a stale cwd is explained, respawned and retried once. */
  load(target: BackendTarget, model: string): Promise<LoadResult> {
    return this.lock.run(model, async () => {
      const { proc, reused } = await this.ensureLocked(target, model);
      try {
        return { pid: proc.pid, port: proc.port, reused, message: await this.loadModel(proc) };
      } catch (first) {
        await this.refresh(proc);
        if (proc.cwd.cwd !== 'stale') throw loadError(proc, first);
        const why = `backend ${proc.backend} (pid ${proc.pid}) was running from a directory that a reinstall replaced`;
        await this.stopLocked(proc, true);
        const fresh = await this.spawnReady(target, model).catch((err: Error) => {
          throw new HangarError('failed', `${why}; the respawn failed: ${err.message}`);
        });
        this.note(fresh, `${why}; respawned from ${target.dir}`);
        try {
          return { pid: fresh.pid, port: fresh.port, reused: false, message: await this.loadModel(fresh) };
        } catch (second) {
          throw new HangarError('failed', `${why}; after a respawn, ${loadError(fresh, second).message}`);
        }
      }
    });
  }

  /** Free (unless forced), SIGTERM to the process group, SIGKILL after the grace period, reap. */
  stop(model: string, options: { force?: boolean } = {}): Promise<void> {
    return this.lock.run(model, async () => {
      const proc = this.procs.get(model);
      if (proc) await this.stopLocked(proc, options.force ?? false);
    });
  }

  /** Forced stop and a fresh spawn from join(backendsDir, backend). */
  respawn(model: string): Promise<ProcessView> {
    return this.lock.run(model, async () => {
      const proc = this.procs.get(model);
      if (!proc) throw new HangarError('not-found', `no backend process runs for model ${model}`);
      await this.stopLocked(proc, true);
      return view(await this.spawnReady(this.liveTarget(proc.backend), model));
    });
  }

  respawnBackend(name: string): Promise<ProcessView[]> {
    const models = [...this.procs.values()].filter((p) => p.backend === name).map((p) => p.model);
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
    const supervised = [...this.procs.values()].filter((p) =>
      p.identity ? target !== null && sameInode(p.identity, target) : running.has(p.pid),
    );
    // A supervised backend's own descendants are stopped with it, not reported as someone else's.
    const ours = new Set([...this.procs.values()].map((p) => p.pid));
    for (const p of supervised) for (const member of processTree(p.pid, { group: true })) ours.add(member.pid);
    const strangers = [...running].filter((pid) => !ours.has(pid) && pid !== process.pid);
    const leftRunning = options.stopUnsupervised ? [] : strangers.map((pid) => ({ pid, command: readCommand(pid) }));
    await Promise.all([
      ...supervised.map((p) => this.stop(p.model)),
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
    return { entry, model: [...this.procs.values()].find((p) => p.pid === pid)?.model ?? null };
  }

  /** Gate 5, after a swap: runs each model again from its backend's new live directory, ready. */
  async respawnAll(list: Array<{ model: string; backend: string }>): Promise<ProcessView[]> {
    // Every respawn settles before this answers, so a caller that undoes a swap on failure races no spawn.
    const results = await Promise.allSettled(list.map(({ model, backend }) => this.ensureRunning(this.liveTarget(backend), model)));
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
        await Promise.all([...this.procs.values()].map((proc) => this.refresh(proc)));
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
    const procs = [...this.procs.values()];
    if (process.platform !== 'linux') {
      return procs.map((p) => ({ pid: p.pid, command: '', cwd: p.cwd.procCwd ?? p.identity?.dir ?? '', status: p.cwd.cwd, supervised: true, backend: p.backend }));
    }
    return scanProcesses(this.options.backendsDir, procs);
  }

  logs(model: string): LogLine[] {
    const proc = this.procs.get(model);
    if (!proc) return [];
    if (proc.logs) return proc.logs.toArray();
    const text = `logs unavailable: backend ${proc.backend} (pid ${proc.pid}) was adopted from a previous Hangar run and has no pipes`;
    return [{ model, stream: 'stderr', text, at: new Date().toISOString() }];
  }

  // ---- internals (callers hold the model's lock where it matters) ----

  private async ensureLocked(target: BackendTarget, model: string): Promise<{ proc: Proc; reused: boolean }> {
    const existing = this.procs.get(model);
    if (existing) {
      if (await this.intact(existing, target)) return { proc: existing, reused: true };
      await this.stopLocked(existing, true);
    }
    return { proc: await this.spawnReady(target, model), reused: false };
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

  /**
   * Spawns and waits for readiness. The port range may overlap the OS's ephemeral ports, so an outgoing connection
   * can take a port between the pool's bind check and the backend's listen: a backend that dies during startup
   * while its port is no longer free is retried on another port.
   */
  private async spawnReady(target: BackendTarget, model: string): Promise<Proc> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.spawnOnce(target, model);
      } catch (err) {
        if (!(err instanceof PortTaken) || attempt === PORT_ATTEMPTS) throw err instanceof PortTaken ? err.error : err;
      }
    }
  }

  private async spawnOnce(target: BackendTarget, model: string): Promise<Proc> {
    const port = await this.ports.allocate();
    const logs = new LogRing();
    const spawned = await spawnBackend({
      backend: target.name,
      model,
      dir: resolve(target.dir),
      port,
      env: { ...(await backendEnv(target.dir, this.options.modelsDir)), ...this.options.runtimeEnv, LOCALAI_GRPC_AUTH_TOKEN: this.options.grpcToken },
      onLine: (stream, text) => {
        const line: LogLine = { model, stream, text, at: new Date().toISOString() };
        logs.push(line);
        this.emit('log', line);
      },
    }).catch((err: unknown) => {
      this.ports.release(port);
      throw err;
    });
    const proc: Proc = {
      model,
      backend: target.name,
      pid: spawned.pid,
      port,
      identity: spawned.identity,
      startedAt: new Date().toISOString(),
      startTime: spawned.startTime,
      state: 'starting',
      cwd: { cwd: 'ok', cwdReason: 'directory intact', procCwd: spawned.identity.dir },
      result: spawned.result,
      logs,
      detach: spawned.detach,
      client: new BackendClient(`127.0.0.1:${port}`, { token: this.options.grpcToken }),
      retired: false,
    };
    this.reaper?.watch(proc.pid);
    this.procs.set(model, proc);
    this.persist();
    this.emit('process', view(proc));

    const died = new AbortController();
    void spawned.result.then(() => {
      died.abort();
      this.retire(proc);
    });
    try {
      await waitReady(port, proc.client, Date.now() + this.options.startTimeoutMs, died.signal);
    } catch (err) {
      if (!(err instanceof NotReadyError)) {
        // The last lines may still be in the pipe; a child that inherited it must not hold the error back long.
        await Promise.race([spawned.drained, delay(DRAIN_LIMIT_MS)]);
        const error = startupDeath(proc, await spawned.result);
        throw (await portIsFree(port)) ? error : new PortTaken(error);
      }
      await this.stopLocked(proc, true);
      throw new HangarError('failed', `backend ${proc.backend} did not become ready for model ${model} within ${this.options.startTimeoutMs} ms: ${err.lastAnswer}`);
    }
    proc.state = 'ready';
    this.emit('process', view(proc));
    return proc;
  }

  private async stopLocked(proc: Proc, force: boolean): Promise<void> {
    if (proc.retired) return;
    proc.state = 'stopping';
    this.emit('process', view(proc));
    if (!force) await proc.client.free(FREE_LIMIT_MS).catch(() => undefined);
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

  /** Removes an exited process: frees its port into quarantine, updates the table, emits exited + removed. */
  private retire(proc: Proc): void {
    if (proc.retired) return;
    proc.retired = true;
    proc.state = 'exited';
    proc.client.close();
    this.ports.release(proc.port);
    this.reaper?.unwatch(proc.pid);
    if (this.procs.get(proc.model) === proc) this.procs.delete(proc.model);
    this.persist();
    this.emit('process', view(proc));
    this.emit('process-removed', proc.model);
  }

  /** Re-probes one process's cwd (and, for an adopted one, whether it still lives); emits on change. */
  private async refresh(proc: Proc): Promise<void> {
    if (proc.retired) return;
    if (!proc.result && !isSameProcess(proc.pid, proc.startTime)) return this.retire(proc);
    const report = await probeCwd(proc.pid, proc.identity);
    if (proc.retired) return;
    const changed = report.cwd !== proc.cwd.cwd || report.cwdReason !== proc.cwd.cwdReason || report.procCwd !== proc.cwd.procCwd;
    proc.cwd = report;
    if (changed) this.emit('process', view(proc));
  }

  private scheduleRecheck(): void {
    if (this.debounce) return;
    this.debounce = setTimeout(() => {
      this.debounce = null;
      void this.recheck();
    }, WATCH_DEBOUNCE_MS);
  }

  /** Re-adopts a table entry if its process is still the one recorded (pid + start time); never touches others. */
  private adopt(entry: TableEntry): void {
    if (this.procs.has(entry.model) || !isSameProcess(entry.pid, entry.startTime)) return;
    const identity = entry.dir && entry.dev && entry.ino ? { dir: entry.dir, dev: BigInt(entry.dev), ino: BigInt(entry.ino) } : null;
    this.ports.claim(entry.port);
    this.reaper?.watch(entry.pid);
    this.procs.set(entry.model, {
      model: entry.model,
      backend: entry.backend,
      pid: entry.pid,
      port: entry.port,
      identity,
      startedAt: entry.startedAt,
      startTime: entry.startTime,
      state: 'ready',
      cwd: { cwd: 'unknown', cwdReason: 'adopted, not yet checked', procCwd: null },
      result: null,
      logs: null,
      detach: null,
      client: new BackendClient(`127.0.0.1:${entry.port}`, { token: this.options.grpcToken }),
      retired: false,
    });
  }

  private persist(): void {
    this.table.save([...this.procs.values()].map(tableEntry));
  }

  private async loadModel(proc: Proc): Promise<string> {
    const { modelsDir } = this.options;
    const result = await proc.client.loadModel({ model: proc.model, modelFile: join(modelsDir, proc.model), modelPath: modelsDir }, LOAD_LIMIT_MS);
    if (!result.success) throw new Error(result.message);
    return result.message;
  }

  /** A line from Hangar itself in the process's log, so the log tells why the process replaced another. */
  private note(proc: Proc, text: string): void {
    const line: LogLine = { model: proc.model, stream: 'stderr', text: `[hangar] ${text}`, at: new Date().toISOString() };
    proc.logs?.push(line);
    this.emit('log', line);
  }

  private liveTarget(backend: string): BackendTarget {
    return { name: backend, dir: join(this.options.backendsDir, backend) };
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

function view(proc: Proc): ProcessView {
  return {
    model: proc.model,
    backend: proc.backend,
    pid: proc.pid,
    port: proc.port,
    dir: proc.identity?.dir ?? '',
    startedAt: proc.startedAt,
    state: proc.state,
    cwd: proc.cwd.cwd,
    cwdReason: proc.cwd.cwdReason,
    procCwd: proc.cwd.procCwd,
  };
}

function tableEntry(proc: Proc): TableEntry {
  const { model, backend, pid, port, startedAt, startTime, identity } = proc;
  const entry: TableEntry = { model, backend, pid, port, startedAt, startTime };
  return identity ? { ...entry, dir: identity.dir, dev: String(identity.dev), ino: String(identity.ino) } : entry;
}

function loadError(proc: Proc, err: unknown): HangarError {
  if (err instanceof HangarError) return err;
  const message = err instanceof BackendCallError ? err.details : (err as Error).message;
  return new HangarError('failed', `backend ${proc.backend} could not load model ${proc.model}: ${message}`);
}

function startupDeath(proc: Proc, result: Result): HangarError {
  const tail = (proc.logs?.toArray() ?? []).filter((l) => l.stream === 'stderr').slice(-STDERR_TAIL_LINES).map((l) => l.text);
  const how = result.signal ? `signal ${result.signal}` : `exit code ${result.exitCode}`;
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
