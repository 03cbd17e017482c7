// Waiting out a link that comes back: a broker blip or a node restarting must not turn a step that went on into a
// failure. A call the link could not carry is tried again until it answers; what the node did meanwhile is then read
// from the node, never guessed.
import { setTimeout as sleep } from 'node:timers/promises';
import { NodeUnreachable } from '../../cluster/request-failure.ts';

export interface Patience {
  /** Until when (ms since the epoch) the link is waited for. */
  untilMs: number;
  everyMs: number;
  /** Whether the one waiting no longer needs the answer (a rollout taken over by another viewer). */
  stop(): boolean;
  /**
   * Calls `back` once the link to the broker is back after it was lost (an answer sent in between never arrives);
   * returns what stops that.
   */
  onRelinked?(back: () => void): () => void;
}

/**
 * The call's answer; a NodeUnreachable is tried again until the patience runs out, then thrown. A call still waiting
 * when the link comes back is asked again at once, not left to wait out its timeout for an answer that was lost.
 */
export async function untilReached<T>(call: () => Promise<T>, patience: Patience): Promise<T> {
  for (;;) {
    try {
      return await unlessRelinked(call(), patience);
    } catch (error) {
      if (!(error instanceof NodeUnreachable) || patience.stop() || Date.now() > patience.untilMs) throw error;
      await sleep(patience.everyMs);
    }
  }
}

function unlessRelinked<T>(attempt: Promise<T>, patience: Patience): Promise<T> {
  const { onRelinked } = patience;
  if (!onRelinked) return attempt;
  return new Promise<T>((resolve, reject) => {
    // The abandoned call's late answer, or failure, goes nowhere: the call is asked again.
    const off = onRelinked(() => reject(new NodeUnreachable('the link to the cluster came back while the call waited: its answer may have been lost')));
    attempt.then(
      (value) => (off(), resolve(value)),
      (error: unknown) => (off(), reject(error)),
    );
  });
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
