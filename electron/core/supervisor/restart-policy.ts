// What happens after a process ends by itself: a restart, or nothing (the policy says so), or "crash-looping". As PM2
// with exp_backoff_restart_delay and max_restarts: a process that ran a while is restarted at once, and so are the
// first two in a row that end soon after their start; each further such end in a row (an unstable run) waits a delay
// that grows, and so many of those in a row leave it stopped; a run that lasted starts both over. The scheduler keeps
// each model's pending restart on a clock it is given.
import type { RestartPolicy } from '../../../shared/index.ts';

export interface RestartRules {
  /** The wait after the third end in a row within quickMs of the start (the first two restart at once); each further doubles it, up to maxMs. */
  baseMs: number;
  maxMs: number;
  /** An end this soon after the start is a quick one: it waits. A later end restarts at once and starts over. */
  quickMs: number;
  /** This many quick ends in a row: crash-looping, left stopped. */
  loopLimit: number;
}

/** Quick ends in a row restarted with no wait before the backoff starts. */
const QUICK_ENDS_AT_ONCE = 2;

export const DEFAULT_RESTART_RULES: RestartRules = { baseMs: 1000, maxMs: 30_000, quickMs: 10_000, loopLimit: 5 };

/** What a model asks of its restarts; a missing value is the host's rule. */
export interface ModelRestart {
  policy: RestartPolicy;
  /** The wait after the third quick end in a row (--restart-delay). */
  delayMs?: number | null;
  /** Quick ends in a row that leave it crash-looping (--max-restarts). */
  maxRestarts?: number | null;
}

/** A model's recent ends, kept across its processes. */
export interface RestartHistory {
  /** Its processes that ended within quickMs of their start, in a row. */
  quickEnds: number;
  /** The wait before the last restart after a quick end; 0 after a run that lasted. */
  backoffMs: number;
}

export type RestartVerdict = { restartInMs: number } | { stay: 'policy' } | { stay: 'loop'; ends: number };

/** Records one end of a process that ran `uptimeMs` in `history` and decides what follows it. */
function afterEnd(restart: ModelRestart, failed: boolean, uptimeMs: number, history: RestartHistory, rules: RestartRules): RestartVerdict {
  const { policy } = restart;
  if (policy === 'never' || (policy === 'on-failure' && !failed)) return { stay: 'policy' };
  if (uptimeMs >= rules.quickMs) {
    history.quickEnds = 0;
    history.backoffMs = 0;
    return { restartInMs: 0 };
  }
  history.quickEnds++;
  if (history.quickEnds >= (restart.maxRestarts ?? rules.loopLimit)) return { stay: 'loop', ends: history.quickEnds };
  // One or two quick ends may be bad luck (an OOM kill, a port race, a dependency still coming up): restarted at
  // once, as PM2 restarts them; a third in a row backs off.
  if (history.quickEnds <= QUICK_ENDS_AT_ONCE) return { restartInMs: 0 };
  history.backoffMs = history.backoffMs > 0 ? history.backoffMs * 2 : (restart.delayMs ?? rules.baseMs);
  history.backoffMs = Math.min(rules.maxMs, history.backoffMs);
  return { restartInMs: history.backoffMs };
}

/** The time and timers the scheduler runs on. */
export interface RestartClock {
  now(): number;
  /** Calls `fire` after `ms`, without keeping the host alive; the handle cancels it. */
  schedule(fire: () => void, ms: number): { cancel(): void };
}

export const systemClock: RestartClock = {
  now: () => Date.now(),
  schedule(fire, ms) {
    const timer = setTimeout(fire, ms).unref();
    return { cancel: () => clearTimeout(timer) };
  },
};

/** At most one pending restart per model: a newer end replaces it, and closing cancels them all. */
export class RestartScheduler {
  private readonly pending = new Map<string, { cancel(): void }>();
  private isClosed = false;

  constructor(
    readonly rules: RestartRules = DEFAULT_RESTART_RULES,
    private readonly clock: RestartClock = systemClock,
  ) {}

  /** The clock's time: a process's uptime is read on it. */
  now(): number {
    return this.clock.now();
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * Records one end of `model`, whose process ran `uptimeMs`, in its `history` and decides what follows; a restart
   * calls `restart` once its wait has passed. Null once closed: a closing host starts nothing again.
   */
  afterEnd(model: string, asked: ModelRestart, failed: boolean, uptimeMs: number, history: RestartHistory, restart: () => void): RestartVerdict | null {
    if (this.isClosed) return null;
    const verdict = afterEnd(asked, failed, uptimeMs, history, this.rules);
    if ('restartInMs' in verdict) {
      this.cancel(model);
      const timer = this.clock.schedule(() => {
        this.pending.delete(model);
        restart();
      }, verdict.restartInMs);
      this.pending.set(model, timer);
    }
    return verdict;
  }

  cancel(model: string): void {
    this.pending.get(model)?.cancel();
    this.pending.delete(model);
  }

  close(): void {
    this.isClosed = true;
    for (const timer of this.pending.values()) timer.cancel();
    this.pending.clear();
  }
}
