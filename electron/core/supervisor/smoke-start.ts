// The smoke start: a new build that no process of the old one vouches for (none ran to respawn from it) is started
// once from its live tree, until it answers Health, then stopped, so that an install or upgrade to a build that cannot
// start fails and is rolled back instead of the next load failing. No row, no model, no log file: a bare spawn to
// Health, on a port of its own, watched by the reaper like any backend process, stopped with all it forked.
import { HangarError } from '../../../shared/index.ts';
import { humanDuration } from '../../../shared/progress.ts';
import type { Platform } from '../platform/types.ts';
import type { Cgroups } from './cgroups.ts';
import { STDERR_TAIL_LINES } from './endings.ts';
import { BackendClient } from './grpc-client.ts';
import type { Launcher } from './launcher.ts';
import { deathWhileStarting, portMoveText, retryOnPortClash, type PortMove } from './port-clash.ts';
import type { PortPool } from './ports.ts';
import { NotReadyError, OutputNudge, waitReady } from './readiness.ts';
import type { ParentWatch } from './reaper.ts';
import type { BackendTarget } from './process-records.ts';
import type { StartBudget } from './start-budget.ts';
import { stopTree } from './tree-stop.ts';

/** The model a smoke start's process is named for in what spawning it may say. */
const SMOKE_MODEL = 'hangar-smoke-start';

export interface SmokeStartParts {
  launcher: Pick<Launcher, 'start' | 'refill'>;
  ports: PortPool;
  parent: ParentWatch;
  cgroups: Cgroups;
  platform: Platform;
  grpcToken?: string;
  budget: StartBudget;
  stopGraceMs: number;
  /** The new build lost its port while it started and is tried again on another (said in the job). */
  portMoved(move: PortMove): void;
}

export class SmokeStart {
  /** How to stop each smoke-started process not stopped yet. */
  private readonly running = new Set<() => Promise<void>>();

  constructor(private readonly parts: SmokeStartParts) {}

  /** Stops every smoke-started process still running (the host is closing: none may outlive it). */
  async close(): Promise<void> {
    await Promise.all([...this.running].map((stop) => stop()));
  }

  /**
   * Resolves once the build at target.dir answered Health, its stop under way (`stopped` settles once it and all it
   * forked are gone, so the caller can finish its own work meanwhile); rejects, stopped, saying why it did not.
   */
  run(target: BackendTarget): Promise<{ stopped: Promise<void> }> {
    return retryOnPortClash(
      () => this.once(target),
      (taken, attempt) => this.parts.portMoved({ backend: target.name, model: null, port: taken.port, text: portMoveText(target.name, taken, attempt) }),
    );
  }

  private async once(target: BackendTarget): Promise<{ stopped: Promise<void> }> {
    const { launcher, ports, parent, cgroups, platform, grpcToken, budget, stopGraceMs } = this.parts;
    const startTimeoutMs = budget.allowed('start', target.name, null);
    const started = Date.now();
    const port = await ports.allocate();
    const stderr: string[] = [];
    const output = new OutputNudge();
    const client = new BackendClient(`127.0.0.1:${port}`, { token: grpcToken });
    const spawned = await launcher
      .start(target, SMOKE_MODEL, port, (stream, text) => {
        output.nudge();
        if (stream !== 'stderr') return;
        stderr.push(text);
        if (stderr.length > STDERR_TAIL_LINES) stderr.shift();
      })
      .catch((err: unknown) => {
        ports.release(port);
        throw err;
      });
    const leader = { pid: spawned.pid, startTime: spawned.startTime, cgroup: spawned.cgroup };
    parent.watch(leader);
    let stopping: Promise<void> | null = null;
    const stop = () =>
      (stopping ??= (async () => {
        // What the caller does once Health answered (a swap settling: writes that wait on the disk) begins first:
        // the tree's read below (from /proc on Linux) holds the event loop for milliseconds.
        await new Promise(setImmediate);
        client.close();
        await stopTree({ platform, cgroups }, leader, spawned.result, stopGraceMs);
        parent.unwatch(leader.pid);
        ports.release(port);
        this.running.delete(stop);
        // Not before: the next shell's move into its cgroup would hold up this one's removal.
        launcher.refill();
      })());
    this.running.add(stop);
    const died = new AbortController();
    void spawned.exit.then(() => died.abort());
    try {
      await waitReady(port, client, started + startTimeoutMs, died.signal, output);
      // A Health answer that arrived after the process exited came from someone else on its port.
      died.signal.throwIfAborted();
      budget.record('start', target.name, Date.now() - started);
    } catch (err) {
      const error =
        err instanceof NotReadyError
          ? new HangarError('failed', `the new build did not answer Health within ${humanDuration(startTimeoutMs)}: ${err.lastAnswer}`)
          : await deathWhileStarting(spawned, port, started, () => stderr, (exit) => {
              const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
              return new HangarError('failed', `the new build ${how} before it answered Health${stderr.length ? `: ${stderr.join(' | ')}` : ' (it said nothing on stderr)'}`);
            });
      await stop();
      throw error;
    }
    return { stopped: stop() };
  }
}
