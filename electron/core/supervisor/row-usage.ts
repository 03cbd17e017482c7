// A row's CPU and memory, read as its view is made (synchronously): from /proc at once under the linux platform
// layer (usage.ts); under another, the last reading of one batched sample in the background (one ps for every row,
// at most once a second), so that making a view never waits for a program to run.
import type { Platform, Usage, UsageSampler as PlatformSampler } from '../platform/types.ts';
import { UsageSampler } from './usage.ts';

const UNKNOWN: Usage = { cpu: null, rss: null };
const MIN_INTERVAL_MS = 1000;

export interface RowUsage {
  sample(pid: number, startedAt: string): Usage;
  forget(pid: number): void;
}

export function rowUsage(platform: Platform): RowUsage {
  return platform.name === 'linux' ? new UsageSampler() : new SampledUsage(platform.usageSampler());
}

class SampledUsage implements RowUsage {
  private readonly last = new Map<number, Usage>();
  /** pid -> when it started: the rows asked for since their process began. */
  private readonly wanted = new Map<number, string>();
  private reading = false;
  private readAt = 0;

  constructor(private readonly sampler: PlatformSampler) {}

  sample(pid: number, startedAt: string): Usage {
    this.wanted.set(pid, startedAt);
    this.refresh();
    return this.last.get(pid) ?? UNKNOWN;
  }

  forget(pid: number): void {
    this.wanted.delete(pid);
    this.last.delete(pid);
    this.sampler.forget(pid);
  }

  private refresh(): void {
    if (this.reading || Date.now() - this.readAt < MIN_INTERVAL_MS) return;
    this.reading = true;
    const pids = [...this.wanted].map(([pid, startedAt]) => ({ pid, startedAt }));
    void this.sampler.sample(pids).then(
      (read) => {
        for (const { pid } of pids) {
          const usage = read.get(pid);
          if (usage && this.wanted.has(pid)) this.last.set(pid, usage);
          else this.last.delete(pid);
        }
      },
      () => undefined,
    ).finally(() => {
      this.reading = false;
      this.readAt = Date.now();
    });
  }
}
