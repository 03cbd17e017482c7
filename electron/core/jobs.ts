import { randomUUID } from 'node:crypto';
import { HangarError } from '../../shared/errors.ts';
import type { JobKind, JobView } from '../../shared/types.ts';
import type { JobHistory } from './job-history.ts';
import { oneLine } from '../../shared/error-text.ts';
import { hidePasswords } from '../../shared/url-password.ts';

export interface JobContext {
  /** The job this work runs as. */
  job: Pick<JobView, 'id' | 'kind' | 'startedAt'>;
  signal: AbortSignal;
  phase(phase: string): void;
  progress(bytes: number, totalBytes: number | null): void;
  /** Adds a line to what the job tells the user when it ends. */
  notice(text: string): void;
}

const PROGRESS_INTERVAL_MS = 100;
const FINISHED_KEPT = 200;

/** Runs install/upgrade/rollback/delete work as jobs: tracks their view, publishes every change, supports cancel. */
export class JobRunner {
  private readonly jobs = new Map<string, { view: JobView; done: Promise<JobView>; abort: AbortController }>();

  constructor(
    readonly node: string,
    private readonly publish: (job: JobView) => void,
    private readonly history?: JobHistory,
  ) {}

  list(): JobView[] {
    return [...this.jobs.values()].map((j) => j.view);
  }

  /** `work` may return how it ended when that is not plain 'done' (e.g. 'up to date'); it becomes the final phase. */
  start(kind: JobKind, backend: string, work: (ctx: JobContext) => Promise<string | void>): JobView {
    const abort = new AbortController();
    const view: JobView = {
      id: randomUUID(),
      node: this.node,
      kind,
      backend,
      state: 'queued',
      phase: 'queued',
      bytes: 0,
      totalBytes: null,
      error: null,
      notice: null,
      startedAt: new Date().toISOString(),
      finishedAt: null,
    };
    let lastProgress = 0;
    /** A progress sample the throttle held back: it goes out before the phase moves on, so the last count is seen. */
    let unsent = false;
    const update = (patch: Partial<JobView>) => {
      Object.assign(view, patch);
      this.publish({ ...view });
    };
    const ctx: JobContext = {
      job: { id: view.id, kind, startedAt: view.startedAt },
      signal: abort.signal,
      phase: (phase) => {
        if (unsent && phase !== view.phase) this.publish({ ...view });
        unsent = false;
        const moved = phase !== view.phase;
        update({ phase, state: 'running' });
        // Kept as it goes: a host that dies now is followed by one that says where the job stopped.
        if (moved) void this.history?.record({ ...view });
      },
      notice: (text) => update({ notice: view.notice ? `${view.notice}; ${text}` : text }),
      progress: (bytes, totalBytes) => {
        view.bytes = bytes;
        view.totalBytes = totalBytes;
        const now = Date.now();
        unsent = !(now - lastProgress >= PROGRESS_INTERVAL_MS || bytes === totalBytes);
        if (!unsent) {
          lastProgress = now;
          this.publish({ ...view });
        }
      },
    };
    const done = (async () => {
      try {
        const outcome = await work(ctx);
        update({ state: 'done', phase: outcome ?? 'done', finishedAt: new Date().toISOString() });
      } catch (error) {
        const cancelled = abort.signal.aborted;
        update({
          state: cancelled ? 'cancelled' : 'failed',
          // A swap whose new build failed its health gate ends rolled back: the build itself failed, not its fetch.
          phase: cancelled ? 'cancelled' : view.phase === 'rolling back' ? 'rolled back' : 'failed',
          error: cancelled ? `${kind} of ${backend} was cancelled` : hidePasswords(oneLine(error)),
          ...(!cancelled && { errorCode: error instanceof HangarError ? error.code : 'failed' }),
          finishedAt: new Date().toISOString(),
        });
      }
      await this.history?.record({ ...view });
      this.prune();
      return { ...view };
    })();
    this.jobs.set(view.id, { view, done, abort });
    this.publish({ ...view });
    void this.history?.record({ ...view });
    return { ...view };
  }

  /**
   * The jobs a previous host run kept, listed again (the newest FINISHED_KEPT), one it left running as interrupted.
   * Called once, as the host starts.
   */
  async restore(): Promise<void> {
    if (!this.history) return;
    const kept = await this.history.restore(new Set(this.jobs.keys()));
    const newest = kept.sort((a, b) => a.startedAt.localeCompare(b.startedAt)).slice(-FINISHED_KEPT);
    const live = [...this.jobs];
    this.jobs.clear();
    for (const view of newest) this.jobs.set(view.id, { view, done: Promise.resolve({ ...view }), abort: new AbortController() });
    for (const [id, job] of live) this.jobs.set(id, job);
  }

  /** A job a previous host run did not live to end, as its next start ended it: listed, kept and published. */
  async ended(view: JobView): Promise<void> {
    this.jobs.set(view.id, { view, done: Promise.resolve({ ...view }), abort: new AbortController() });
    this.publish({ ...view });
    await this.history?.record({ ...view });
  }

  /** A job that finished long ago, or before a restart, still answers with how it ended. */
  async wait(id: string): Promise<JobView> {
    const job = this.jobs.get(id);
    return job ? job.done : this.finished(id);
  }

  async cancel(id: string): Promise<JobView> {
    const job = this.jobs.get(id);
    if (!job) return this.finished(id);
    if (job.view.finishedAt === null) job.abort.abort(new HangarError('conflict', 'cancelled'));
    return { ...job.view };
  }

  private async finished(id: string): Promise<JobView> {
    const job = await this.history?.find(id);
    if (!job) throw new HangarError('not-found', `no job ${id}`);
    return job;
  }

  private prune(): void {
    const finished = [...this.jobs.values()].filter((j) => j.view.finishedAt !== null);
    for (const job of finished.slice(0, Math.max(0, finished.length - FINISHED_KEPT))) this.jobs.delete(job.view.id);
  }
}
