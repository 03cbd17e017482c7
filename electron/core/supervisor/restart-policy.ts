// What happens after a process ends by itself: a restart after an exponential backoff, or nothing (the policy says
// so), or "crash-looping" when it ended too often within a window, as PM2's autorestart with its unstable-restart
// limit decides. The scheduler keeps each model's pending restart on a clock it is given.
import type { RestartPolicy } from '../../../shared/index.ts';

export interface RestartRules {
  /** The first backoff; each further end within the window doubles it, up to maxMs. */
  baseMs: number;
  maxMs: number;
  /** This many ends within windowMs: crash-looping, left stopped. */
  loopLimit: number;
  windowMs: number;
}

export const DEFAULT_RESTART_RULES: RestartRules = { baseMs: 1000, maxMs: 30_000, loopLimit: 5, windowMs: 60_000 };

export type RestartVerdict = { restartInMs: number } | { stay: 'policy' } | { stay: 'loop'; ends: number };

/** Records one end at `now` in `ends` (the recent ends, pruned in place) and decides what follows it. */
function afterEnd(policy: RestartPolicy, failed: boolean, ends: number[], now: number, rules: RestartRules): RestartVerdict {
  if (policy === 'never' || (policy === 'on-failure' && !failed)) return { stay: 'policy' };
  const recent = ends.filter((at) => now - at < rules.windowMs);
  recent.push(now);
  ends.splice(0, ends.length, ...recent);
  if (recent.length >= rules.loopLimit) return { stay: 'loop', ends: recent.length };
  return { restartInMs: Math.min(rules.maxMs, rules.baseMs * 2 ** (recent.length - 1)) };
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

  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * Records one end of `model` in its recent `ends` and decides what follows; a restart calls `restart` once its
   * backoff has passed. Null once closed: a closing host starts nothing again.
   */
  afterEnd(model: string, policy: RestartPolicy, failed: boolean, ends: number[], restart: () => void): RestartVerdict | null {
    if (this.isClosed) return null;
    const verdict = afterEnd(policy, failed, ends, this.clock.now(), this.rules);
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
