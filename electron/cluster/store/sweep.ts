// An admin viewer's sweep of a bucket: every value it does not take (unsigned, signed by a key it does not trust,
// replayed, malformed) is removed once it has been stored longer than `afterMs`, so a flood of junk ends and the keys
// it took are free again. Not `max_age` on the buckets: that would also remove a pin its viewer wrote once and left in
// force, from under the nodes. What the sweeping host takes is never removed. A delete marker is, where `markers` says
// so (the rollouts a coordinator no longer keeps): once every running host has heard it, a key that is not there says
// the same, and the marker would otherwise hold one of the bucket's keys for good.
import { setTimeout as sleep } from 'node:timers/promises';
import type { BucketSource } from './bucket-source.ts';

export interface SweepOptions {
  source: BucketSource;
  /** Reads the whole bucket again and resolves once that read succeeded: what it holds is then current. */
  reread(): Promise<void>;
  /** Whether this host takes the value stored under `storedKey` at `revision`. */
  holds(storedKey: string, revision: number): boolean;
  afterMs: number;
  /** Whether delete markers as old go too. */
  markers: boolean;
}

const EVERY_MS = { min: 1000, max: 10 * 60_000 };

export class BucketSweep {
  private readonly stop = new AbortController();
  private running: Promise<void> | null = null;

  constructor(private readonly options: SweepOptions) {}

  private get closed(): boolean {
    return this.stop.signal.aborted;
  }

  start(): void {
    const every = Math.min(EVERY_MS.max, Math.max(EVERY_MS.min, Math.floor(this.options.afterMs / 2)));
    this.running = (async () => {
      while (!this.closed) {
        // A sweep that fails (the store out of reach) is tried again at the next round.
        const removed = await this.sweep().catch(() => 0);
        if (removed > 0 && !this.closed) await this.options.reread();
        await sleep(every, undefined, { signal: this.stop.signal }).catch(() => undefined);
      }
    })();
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.running;
  }

  /** Removes what is old enough and not taken; returns how many values it removed. */
  async sweep(): Promise<number> {
    await this.options.reread();
    let removed = 0;
    for (const stored of await this.options.source.storedKeys()) {
      if (this.closed) break;
      const entry = await this.options.source.get(stored);
      if (!entry || Date.now() - entry.created.getTime() < this.options.afterMs) continue;
      if (entry.operation === 'PUT' ? this.options.holds(stored, entry.revision) : !this.options.markers) continue;
      if (await this.options.source.erase(entry.revision)) removed++;
    }
    return removed;
  }
}
