// The health watch: ready backends are asked Health and Status on a timer, so a hung one or a lost model shows.
import type { ProcessState } from '../../../shared/index.ts';
import type { Endings } from './endings.ts';
import type { Proc, ProcessRecords } from './process-records.ts';

/** States in which the health watch asks a backend whether it still answers. */
const WATCHED = new Set<ProcessState>(['ready', 'unresponsive']);

export class HealthWatch {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly records: ProcessRecords,
    private readonly endings: Pick<Endings, 'endedUnseen'>,
    private readonly timeoutMs: number,
  ) {}

  /** One round now, then one every `everyMs`. */
  async start(everyMs: number): Promise<void> {
    this.timer = setInterval(() => void this.round(), everyMs).unref();
    await this.round();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Every ready or unresponsive backend is asked Health (and Status), each call bounded. */
  async round(): Promise<void> {
    await Promise.all(this.records.all().filter((p) => watched(p)).map((p) => this.probe(p)));
  }

  private async probe(proc: Proc): Promise<void> {
    if ((await this.endings.endedUnseen([proc])).length > 0) return;
    const timeout = this.timeoutMs;
    const answered = await proc.client.health(timeout).then(() => true, () => false);
    if (!watched(proc)) return;
    if (!answered) {
      if (proc.state === 'unresponsive') return;
      proc.state = 'unresponsive';
      proc.error = `no Health answer within ${timeout} ms`;
      this.records.publish(proc);
      return;
    }
    let changed = proc.state !== 'ready';
    if (changed) {
      proc.state = 'ready';
      proc.error = null;
    }
    // Whether the model is loaded is the backend's word. Status is optional in LocalAI's protocol: a backend that
    // does not implement it is taken at its last LoadModel answer.
    const status = await proc.client.status(timeout).catch(() => null);
    if (status && !proc.retired && proc.state === 'ready') {
      const loaded = status.state === 'READY' || status.state === 'BUSY';
      if (!loaded && proc.loaded) proc.error = `the backend reports no model loaded (Status ${status.state})`;
      if (loaded !== proc.loaded) {
        proc.loaded = loaded;
        changed = true;
      }
    }
    if (changed) this.records.publish(proc);
  }
}

/** Ready and unresponsive backends, and adopted ones not yet confirmed (a spawned one is starting for waitReady). */
function watched(proc: Proc): boolean {
  return !proc.retired && (WATCHED.has(proc.state) || (proc.state === 'starting' && proc.result === null));
}
