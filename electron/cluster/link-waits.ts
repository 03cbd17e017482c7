// Waiting out a link that comes back: a broker blip or a node restarting must not turn a step that went on into a
// failure. A call the link could not carry is tried again until it answers; what the node did meanwhile is then read
// from the node, never guessed.
import { setTimeout as sleep } from 'node:timers/promises';
import { NodeUnreachable } from './request-failure.ts';

export interface Patience {
  /** Until when (ms since the epoch) the link is waited for. */
  untilMs: number;
  everyMs: number;
  /** Whether the one waiting no longer needs the answer (a rollout taken over by another viewer). */
  stop(): boolean;
}

/** The call's answer; a NodeUnreachable is tried again until the patience runs out, then thrown. */
export async function untilReached<T>(call: () => Promise<T>, patience: Patience): Promise<T> {
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof NodeUnreachable) || patience.stop() || Date.now() > patience.untilMs) throw error;
      await sleep(patience.everyMs);
    }
  }
}

/** A write to the cluster's store, tried again while the broker is away; false when it never went through. */
export async function untilStored(write: () => Promise<unknown>, patience: Patience): Promise<boolean> {
  while (!patience.stop()) {
    try {
      await write();
      return true;
    } catch {
      if (Date.now() > patience.untilMs) return false;
      await sleep(patience.everyMs);
    }
  }
  return false;
}
