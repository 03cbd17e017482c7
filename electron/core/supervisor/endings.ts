// A process's end: its resources are freed; the row of one Hangar stopped goes, one that ended by itself stays to say
// how, and the model's restart policy decides what follows.
import type { Platform } from '../platform/types.ts';
import type { Cgroups } from './cgroups.ts';
import type { ModelLogs } from './model-logs.ts';
import type { PortPool } from './ports.ts';
import type { ParentWatch } from './reaper.ts';
import { endText, freshHistory, type Proc, type ProcessRecords } from './process-records.ts';
import type { RestartScheduler } from './restart-policy.ts';
import { alive } from './signals.ts';
import type { RowUsage } from './row-usage.ts';

export const STDERR_TAIL_LINES = 5;

/**
 * Runs work that starts a model again by itself (a restart after a crash, a reload after a host restart) under the
 * model's lock and its backend's, so it never races a user's operation or a swap.
 */
export type SelfStart = (backend: string, model: string, work: () => Promise<void>) => Promise<void>;

export interface EndingsParts {
  records: ProcessRecords;
  logs: ModelLogs;
  ports: PortPool;
  parent: ParentWatch;
  cgroups: Cgroups;
  platform: Platform;
  usage: RowUsage;
  restarts: RestartScheduler;
  selfStart: SelfStart;
  /** A fresh process for the model whose process `old` ended, its model loaded again. */
  startAgain(old: Proc, why: string): Promise<Proc>;
}

export class Endings {
  constructor(private readonly parts: EndingsParts) {}

  /** Frees a process's resources once it has ended (what is left in its cgroup goes too); the row stays until removeRow. */
  free(proc: Proc): void {
    proc.retired = true;
    proc.client.close();
    this.parts.ports.release(proc.port);
    this.parts.parent.unwatch(proc.pid);
    this.parts.usage.forget(proc.pid);
    void this.parts.cgroups.release(proc.cgroup);
  }

  /**
   * Removes a process Hangar stopped (or one that died while starting): stopping (or exited), then removed. One Hangar
   * stopped reads `stopping` to its end: `exited`, for the moment before its row goes, would offer a restart no one
   * asked for (a swap's stop is followed by its respawn). `leftBehind`: what its stop could not see gone, in its log.
   */
  retire(proc: Proc, leftBehind: string[] = []): void {
    for (const line of leftBehind) this.parts.logs.note(proc, `after the stop of pid ${proc.pid}: ${line}`);
    if (proc.retired) return;
    this.free(proc);
    this.parts.logs.of(proc.model).separator(`pid ${proc.pid} ${proc.stopping ? 'stopped by Hangar' : 'exited while starting'}`);
    if (!proc.stopping) proc.state = 'exited';
    this.parts.records.removeRow(proc);
  }

  /** A process ended. Unless Hangar stopped it (or it died starting), its row stays with how it ended. */
  ended(proc: Proc, how: { code: number | null; signal: string | null }): void {
    const { records, logs } = this.parts;
    if (proc.retired || records.isHandedOver) return;
    if (proc.stopping || proc.state === 'starting') return this.retire(proc);
    this.free(proc);
    const failed = how.code !== 0 || how.signal !== null;
    proc.exit = { ...how, at: new Date().toISOString(), tail: stderrTail(proc) };
    proc.state = failed ? 'crashed' : 'exited';
    proc.loaded = false;
    // What was said of the running process (it hung, it lost its model) is no word on its end, and would hide it.
    proc.error = null;
    logs.of(proc.model).separator(`pid ${proc.pid} ${endText(proc.exit)}`, proc.exit.at);
    records.persist();
    this.applyPolicy(proc, failed);
    records.publish(proc);
  }

  /** An adopted process has no exit to wait for: those of `procs` that no longer run, their ends recorded (one read). */
  async endedUnseen(procs: Proc[]): Promise<Proc[]> {
    const adopted = procs.filter((proc) => !proc.result);
    const live = new Set(await alive(this.parts.platform, adopted));
    const ended = adopted.filter((proc) => !live.has(proc));
    for (const proc of ended) this.ended(proc, { code: null, signal: null });
    return ended;
  }

  /** The model is asked for again by the user: a pending restart and the count of its recent ends give way. */
  forgive(model: string, backend: string): void {
    this.cancelRestart(model);
    this.parts.records.specFor(model, backend).history = freshHistory();
  }

  cancelRestart(model: string): void {
    this.parts.restarts.cancel(model);
  }

  close(): void {
    this.parts.restarts.close();
  }

  /** Schedules a restart after the backoff, or marks a crash loop, as the model's policy says. */
  private applyPolicy(proc: Proc, failed: boolean): void {
    const { records, restarts } = this.parts;
    const spec = records.spec(proc.model);
    if (!spec) return;
    const uptimeMs = restarts.now() - Date.parse(proc.startedAt);
    const asked = { policy: spec.policy, delayMs: spec.delayMs, maxRestarts: spec.maxRestarts };
    const verdict = restarts.afterEnd(proc.model, asked, failed, uptimeMs, spec.history, () => void this.autoRestart(proc));
    if (!verdict) return;
    if ('restartInMs' in verdict) {
      proc.message = verdict.restartInMs === 0 ? `restarting (policy ${spec.policy})` : `restarting in ${formatMs(verdict.restartInMs)} (policy ${spec.policy}; it ended within ${formatMs(restarts.rules.quickMs)} of its start)`;
    } else if (verdict.stay === 'loop') {
      proc.state = 'crash-looping';
      const { quickMs } = restarts.rules;
      proc.error = `ended ${verdict.ends} times in a row within ${formatMs(quickMs)} of its start: left stopped (last: ${endText(proc.exit!)})`;
    }
  }

  private autoRestart(old: Proc): Promise<void> {
    const { records, restarts } = this.parts;
    return this.parts.selfStart(old.backend, old.model, async () => {
      if (restarts.closed || records.get(old.model) !== old || !records.spec(old.model)) return;
      try {
        await this.parts.startAgain(old, `restarted after pid ${old.pid} ${endText(old.exit!)}`);
      } catch {
        // The failed start counts as another end of the model.
        if (records.get(old.model) === old) {
          old.exit = { ...old.exit!, at: new Date().toISOString() };
          this.applyPolicy(old, true);
          records.publish(old);
        }
      }
    });
  }
}

/** The last lines a process wrote to stderr. */
export function stderrTail(proc: Proc): string[] {
  return (proc.logs?.toArray() ?? []).filter((l) => l.stream === 'stderr').slice(-STDERR_TAIL_LINES).map((l) => l.text);
}

function formatMs(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
}
