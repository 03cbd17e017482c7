// The one wait the tests use for what no event tells: `probe` is asked every 20 ms until it gives a value.
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `probe` until it gives a value (anything but undefined); fails, naming `what`, after `withinMs`, with what
 * `seen` says of the state it found instead.
 */
export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, withinMs: number, seen?: () => string | Promise<string>): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${withinMs} ms${seen ? `: ${await seen()}` : ''}`);
    await sleep(20);
  }
}
