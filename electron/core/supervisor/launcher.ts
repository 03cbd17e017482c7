// Starting a model's process: a port (its old one while free), the spawn, readiness, another port if it was taken.
import { resolve } from 'node:path';
import { HangarError } from '../../../shared/index.ts';
import { humanDuration } from '../../../shared/progress.ts';
import { directoryEnv, hostBackendEnv } from './backend-env.ts';
import type { Platform } from '../platform/types.ts';
import type { Cgroups } from './cgroups.ts';
import { stderrTail, type Endings } from './endings.ts';
import { BackendClient } from './grpc-client.ts';
import { LogRing } from './log-ring.ts';
import type { ModelLogs } from './model-logs.ts';
import { deathWhileStarting, portMoveText, retryOnPortClash, type PortMove } from './port-clash.ts';
import type { PortPool } from './ports.ts';
import { NotReadyError, OutputNudge, waitReady } from './readiness.ts';
import type { ParentWatch } from './reaper.ts';
import { newRow, startCancelled, type BackendTarget, type ModelSpec, type Proc, type ProcessRecords } from './process-records.ts';
import { spawnBackend, type Spawned } from './spawn.ts';
import type { Stopping } from './stopping.ts';
import { killRemains } from './tree-stop.ts';
import type { StartBudget } from './start-budget.ts';
import { WarmShell } from './warm-shell.ts';

export interface LaunchSettings {
  modelsDir: string;
  /** e.g. { HANGAR_NODE: process.execPath } (+ ELECTRON_RUN_AS_NODE in Electron). */
  runtimeEnv: Record<string, string>;
  grpcToken?: string;
  startTimeoutMs: number;
}

export interface LaunchParts {
  budget: StartBudget;
  records: ProcessRecords;
  logs: ModelLogs;
  ports: PortPool;
  parent: ParentWatch;
  endings: Endings;
  stopping: Stopping;
  cgroups: Cgroups;
  platform: Platform;
  /** A start lost its port and is tried again on another (said in the job and the log). */
  portMoved(move: PortMove): void;
}

export class Launcher {
  private readonly warm: WarmShell;

  constructor(
    private readonly settings: LaunchSettings,
    private readonly parts: LaunchParts,
  ) {
    this.warm = new WarmShell(parts.cgroups, () => this.hostEnv(), parts.platform.leaderSetup);
  }

  /** Has a shell wait for the next start (warm-shell.ts), once nothing is starting. */
  refill(): void {
    this.warm.fill();
  }

  close(): Promise<void> {
    return this.warm.close();
  }

  /**
   * Spawns and waits for readiness. The port range may overlap the OS's ephemeral ports, so an outgoing connection
   * can take a port between the pool's bind check and the backend's listen: a backend that dies during startup
   * while its port is no longer free is retried on another port. `loadFollows`: the caller loads the model next.
   * `respawn`: it replaces a process that still ran or was stale, and its log's separator says so.
   */
  spawnReady(target: BackendTarget, model: string, loadFollows: boolean, respawn = false): Promise<Proc> {
    let lost: PortMove | null = null;
    return retryOnPortClash(
      async () => {
        const output = new OutputNudge();
        try {
          const { proc, spawned } = await this.spawn(target, model, lost, output, respawn);
          await this.untilReady(proc, spawned, output, loadFollows);
          return proc;
        } finally {
          this.refill();
        }
      },
      (taken, attempt) => {
        lost = { backend: target.name, model, port: taken.port, text: portMoveText(target.name, taken, attempt) };
        this.parts.portMoved(lost);
      },
    );
  }

  /** The process and its row, starting; its exit is watched from here on. `lost`: the port this start's last try lost. */
  private async spawn(target: BackendTarget, model: string, lost: PortMove | null, output: OutputNudge, respawn: boolean): Promise<{ proc: Proc; spawned: Spawned }> {
    const { records, logs: modelLogs, ports } = this.parts;
    const { grpcToken } = this.settings;
    const spec = records.specFor(model, target.name);
    const { port, moved } = lost ? await this.portAfter(lost) : await this.portFor(spec);
    const logs = new LogRing();
    const modelLog = modelLogs.of(model);
    // What it prints before its start is logged waits for the start's separator line: the log reads in order.
    let held: Array<['stdout' | 'stderr', string]> | null = [];
    const onLine = (stream: 'stdout' | 'stderr', text: string) => {
      if (held) return void held.push([stream, text]);
      modelLogs.line(model, logs, stream, text);
      output.nudge();
    };
    const release = () => {
      const early = held ?? [];
      held = null;
      for (const [stream, text] of early) onLine(stream, text);
    };
    const spawned = await this.start(target, model, port, onLine).catch((err: unknown) => {
      release();
      ports.release(port);
      throw err;
    });
    const restarted = records.get(model) !== undefined || spec.port !== null;
    if (restarted) spec.restarts++;
    spec.port = port;
    const startedAt = new Date().toISOString();
    modelLog.separator(`${respawn ? 'respawn' : restarted ? 'restart' : 'start'}: pid ${spawned.pid}, backend ${target.name}, port ${port}`, startedAt);
    release();
    const proc = newRow({
      model,
      backend: target.name,
      pid: spawned.pid,
      port,
      identity: spawned.identity,
      startedAt,
      startTime: spawned.startTime,
      cgroup: spawned.cgroup,
      cwd: { cwd: 'ok', cwdReason: 'directory intact', procCwd: spawned.identity.dir },
      result: spawned.result,
      logs,
      detach: spawned.detach,
      client: new BackendClient(`127.0.0.1:${port}`, { token: grpcToken }),
      loaded: false,
      message: moved,
    });
    proc.deadline = Date.parse(startedAt) + this.parts.budget.allowed('start', target.name, spec.startTimeoutMs);
    this.parts.parent.watch(proc);
    records.put(proc);
    records.persist();
    records.publish(proc);
    return { proc, spawned };
  }

  /**
   * `<dir>/run.sh` on `port`, in a cgroup of its own where there are cgroups (removed again if the spawn fails): the
   * waiting shell becomes it where one waits and the backend's directory adds nothing to the host's environment.
   */
  async start(target: BackendTarget, model: string, port: number, onLine: (stream: 'stdout' | 'stderr', text: string) => void): Promise<Spawned> {
    const { cgroups, platform } = this.parts;
    const dir = resolve(target.dir);
    const own = await directoryEnv(dir);
    const shell = Object.keys(own).length === 0 ? this.warm.take(dir) : null;
    const cgroup = shell ? shell.cgroup : await cgroups.create();
    return spawnBackend(platform, { backend: target.name, model, dir, port, cgroup, env: { ...this.hostEnv(), ...own }, onLine, shell }).catch(async (err: unknown) => {
      await shell?.end();
      await cgroups.release(cgroup);
      throw err;
    });
  }

  /** Ready once Health says OK; a death while starting is an error with its last words (PortTaken: try again). */
  private async untilReady(proc: Proc, spawned: Spawned, output: OutputNudge, loadFollows: boolean): Promise<void> {
    const { endings } = this.parts;
    const died = new AbortController();
    void spawned.exit.then((how) => {
      // On its exit, not once its pipes close: until then, what answers on its port may be someone else.
      died.abort();
      if (proc.stopping) return;
      // What it forked may still hold its pipes (and its port): it goes with its leader.
      void killRemains(this.parts, proc);
      if (proc.state !== 'starting') endings.ended(proc, how);
    });
    void spawned.result.then(() => endings.retire(proc));
    const { budget } = this.parts;
    const started = Date.parse(proc.startedAt);
    const deadline = proc.deadline ?? started;
    try {
      await waitReady(proc.port, proc.client, deadline, died.signal, output);
      // A Health answer that arrived after the process exited came from someone else on its port.
      died.signal.throwIfAborted();
      budget.record('start', proc.backend, Date.now() - started);
    } catch (err) {
      if (proc.cancelled) throw startCancelled(proc);
      if (!(err instanceof NotReadyError)) throw await deathWhileStarting(spawned, proc.port, started, () => stderrTail(proc), (exit) => startupDeath(proc, exit));
      await this.parts.stopping.process(proc, true);
      throw new HangarError('failed', `backend ${proc.backend} did not become ready for model ${proc.model} within ${humanDuration(deadline - started)}: ${err.lastAnswer}`);
    } finally {
      proc.deadline = null;
    }
    // With its load to follow, the row goes from starting to loading: ready without the model would show it idle.
    if (loadFollows) proc.state = 'loading';
    else {
      proc.state = 'ready';
      this.parts.records.publish(proc);
    }
  }

  /** What every backend of this host finds in its environment, beyond the host's own. */
  private hostEnv(): Record<string, string | undefined> {
    const { modelsDir, runtimeEnv, grpcToken } = this.settings;
    return { ...hostBackendEnv(modelsDir), ...runtimeEnv, LOCALAI_GRPC_AUTH_TOKEN: grpcToken };
  }

  /** The model's previous port when it is free again (a client pinned to it keeps working), else a new one. */
  private async portFor(spec: ModelSpec): Promise<{ port: number; moved: string | null }> {
    const { ports } = this.parts;
    const old = spec.port;
    if (old !== null && (await ports.reclaim(old))) return { port: old, moved: null };
    const port = await ports.allocate();
    return { port, moved: old !== null && old !== port ? `moved from port ${old} to ${port}: ${old} is in use` : null };
  }

  /** Another port for a start whose port was taken while it started. */
  private async portAfter(lost: PortMove): Promise<{ port: number; moved: string }> {
    const port = await this.parts.ports.allocate();
    return { port, moved: `moved from port ${lost.port} to ${port}: ${lost.port} was taken while the backend started` };
  }
}

function startupDeath(proc: Proc, exit: { code: number | null; signal: string | null }): HangarError {
  const tail = stderrTail(proc);
  const how = exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
  const said = tail.length ? `: ${tail.join(' | ')}` : ' without output';
  return new HangarError('failed', `backend ${proc.backend} exited while starting for model ${proc.model} (${how})${said}`);
}
