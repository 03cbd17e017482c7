// What happens after a process ends by itself: a restart after an exponential backoff, or nothing (the policy says
// so), or "crash-looping" when it ended too often within a window, as PM2's autorestart with its unstable-restart
// limit decides.
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
export function afterEnd(policy: RestartPolicy, failed: boolean, ends: number[], now: number, rules: RestartRules): RestartVerdict {
  if (policy === 'never' || (policy === 'on-failure' && !failed)) return { stay: 'policy' };
  const recent = ends.filter((at) => now - at < rules.windowMs);
  recent.push(now);
  ends.splice(0, ends.length, ...recent);
  if (recent.length >= rules.loopLimit) return { stay: 'loop', ends: recent.length };
  return { restartInMs: Math.min(rules.maxMs, rules.baseMs * 2 ** (recent.length - 1)) };
}
