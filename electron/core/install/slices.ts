import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** The longest blocking work (a directory's reads, a listing made into JSON) holds the event loop before it lets other work run. */
const SLICE_MS = 4;

/** `work` on each item, in slices of blocking work, letting the event loop run between them. */
export async function inSlices<I>(items: Iterable<I>, work: (item: I) => void): Promise<void> {
  let until = performance.now() + SLICE_MS;
  for (const item of items) {
    work(item);
    if (performance.now() < until) continue;
    await nextTurn();
    until = performance.now() + SLICE_MS;
  }
}
