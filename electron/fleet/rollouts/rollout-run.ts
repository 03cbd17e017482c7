// A rollout this host runs, as its record in the cluster's store: the record as it last wrote it and the revision
// that write got. Each step's outcome is written behind the work, and the record at least every heartbeat (its lease),
// one write at a time, at the revision this host last wrote. A revision that moved on ends the run here: another
// viewer took it over (its record, at a later revision, says so), or the record was lost (rollouts.ts then halts it).
import type { RolloutNode, RolloutView } from '../../../shared/types.ts';
import type { RolloutRecord } from '../../cluster/store/bodies.ts';
import { RecordConflict, type Records } from '../../cluster/store/records.ts';

export interface RolloutRunOptions {
  records: Records<RolloutRecord>;
  heartbeatMs: number;
  /** The run is let go: its final record is in the store, or the record is no longer this host's. */
  onRelease(): void;
}

export class RolloutRun {
  /** The record moved on without this host: it stops working on the rollout. */
  lost = false;
  /** The record changed since it was last written. */
  private dirty = false;
  /** The writes under way, or null. */
  private writing: Promise<void> | null = null;
  /** The link to the store came back while a write was under way: it is not waited for, and the record written again. */
  private relinkedMeanwhile = false;
  private wakeOnRelink: () => void = () => undefined;
  /** Writes whose answer was not waited for (the outage may have cut it, or not): each as written, to know it again. */
  private readonly unanswered = new Set<string>();
  /** Writes the record a heartbeat after its last write: a step's write counts as one. */
  private readonly lease: NodeJS.Timeout;

  constructor(
    readonly record: RolloutRecord,
    private revision: number,
    private readonly options: RolloutRunOptions,
  ) {
    this.lease = setInterval(() => void this.save(), options.heartbeatMs);
  }

  get rollout(): RolloutView {
    return this.record.rollout;
  }

  /** Whether the record was taken over by another viewer (it holds a later revision), rather than lost. */
  takenOver(): boolean {
    return (this.options.records.get(this.rollout.id)?.revision ?? 0) > this.revision;
  }

  /** A step's outcome, written behind the work: the next node does not wait for the store. */
  mark(step: RolloutNode, to: RolloutNode['step'], reason: string | null): void {
    Object.assign(step, { step: to, reason });
    void this.save();
  }

  /** The end, written: the run is let go once its final record is in the store (the lease retries until it is). */
  async finish(state: RolloutView['state']): Promise<void> {
    Object.assign(this.rollout, { state, finishedAt: new Date().toISOString() });
    await this.save();
  }

  /** The link to the store is back: a write the outage cut is made now, not a heartbeat later. */
  relinked(): void {
    if (this.writing) {
      this.relinkedMeanwhile = true;
      this.wakeOnRelink();
    } else if (this.dirty) void this.save();
  }

  release(): void {
    clearInterval(this.lease);
    this.options.onRelease();
  }

  /**
   * Writes the record, one write at a time, the newest record each time (changes made meanwhile go in one write). A
   * revision that moved on marks the run lost, unless it moved on by a write of this run whose answer the outage cut.
   * A write that fails otherwise (the store out of reach) is tried again next heartbeat, or at once when the link
   * comes back: a write under way then is not waited for (its answer may be lost, and its timeout seconds away). Each
   * write puts the lease's next one a heartbeat later: the record is still never silent longer than a heartbeat and a
   * write, with no write that says nothing new while steps keep it changing.
   */
  save(): Promise<void> {
    this.dirty = true;
    this.writing ??= (async () => {
      // What changes in the same turn (the last step's outcome and the rollout's end) goes in one write.
      await new Promise(setImmediate);
      while (this.dirty && !this.lost) {
        this.dirty = false;
        const record = { ...this.record, beat: this.record.beat + 1 };
        const written = structuredClone(record);
        const write = this.options.records.update(this.rollout.id, written, this.revision);
        try {
          const revision = await this.unlessRelinked(write);
          if (revision === null) {
            this.unanswered.add(JSON.stringify(written));
            void write.catch(() => undefined);
            this.dirty = true;
            continue;
          }
          this.revision = revision;
          this.record.beat = record.beat;
          this.unanswered.clear();
          this.lease.refresh();
        } catch (error) {
          if (error instanceof RecordConflict && this.ownWrite()) {
            this.dirty = true;
            continue;
          }
          if (error instanceof RecordConflict) this.lost = true;
          else this.dirty = true;
          if (this.lost || !this.relinkedMeanwhile) break;
        }
      }
      this.writing = null;
      if (this.lost || (!this.dirty && this.rollout.finishedAt !== null)) this.release();
    })();
    return this.writing;
  }

  /** The write's revision, or null when the link came back before it was answered. */
  private unlessRelinked(write: Promise<number>): Promise<number | null> {
    // A return of the link before this write began is over: this write is made after it.
    this.relinkedMeanwhile = false;
    return new Promise<number | null>((resolve, reject) => {
      this.wakeOnRelink = () => resolve(null);
      write.then(resolve, reject);
    }).finally(() => {
      this.wakeOnRelink = () => undefined;
    });
  }

  /** The record in the store is a write of this run that was not waited for: the run goes on from its revision. */
  private ownWrite(): boolean {
    const stored = this.options.records.get(this.rollout.id);
    if (!stored || !this.unanswered.has(JSON.stringify(stored.value))) return false;
    this.revision = stored.revision;
    this.record.beat = stored.value.beat;
    this.unanswered.clear();
    return true;
  }
}
