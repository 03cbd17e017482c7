// The node's jobs, kept in `<home>/state/jobs.json`: each as it started, then as it ended. A client that waits on a
// job pruned from memory learns how it ended, and the next start of the host lists the jobs again, one that was
// still running ended as interrupted.
import { join } from 'node:path';
import type { JobView } from '../../shared/types.ts';
import { CoalescedFile } from './coalesced-file.ts';

const KEPT = 500;

interface HistoryFile {
  version: 1;
  jobs: JobView[];
}

function isJob(value: unknown): value is JobView {
  const job = value as JobView;
  return typeof job === 'object' && job !== null && typeof job.id === 'string' && typeof job.state === 'string' && typeof job.startedAt === 'string' && (job.finishedAt === null || typeof job.finishedAt === 'string');
}

/** A job the host did not live to end: it ended when the host stopped, as far as anyone can tell. */
export function interrupted(job: JobView, at: string): JobView {
  return {
    ...job,
    state: 'failed',
    phase: 'interrupted',
    error: `interrupted: the agent stopped while the ${job.kind} of ${job.backend} was ${job.phase}; it did not finish`,
    finishedAt: at,
  };
}

export class JobHistory {
  private readonly file: CoalescedFile<HistoryFile>;
  /** One read of the file, shared by every caller: records made while it is under way must all land in it. */
  private loading: Promise<Map<string, JobView>> | null = null;

  constructor(stateDir: string) {
    this.file = new CoalescedFile(join(stateDir, 'jobs.json'));
  }

  async find(id: string): Promise<JobView | null> {
    return (await this.load()).get(id) ?? null;
  }

  async record(job: JobView): Promise<void> {
    const jobs = await this.load();
    jobs.set(job.id, job);
    for (const old of [...jobs.keys()].slice(0, Math.max(0, jobs.size - KEPT))) jobs.delete(old);
    this.save(jobs);
  }

  /**
   * Every kept job, in the order recorded, for the host's start: one that a previous run left running (none of
   * `live`, this run's own) is ended as interrupted, and kept so.
   */
  async restore(live: ReadonlySet<string>): Promise<JobView[]> {
    const jobs = await this.load();
    const now = new Date().toISOString();
    const left = [...jobs.values()].filter((job) => job.finishedAt === null && !live.has(job.id));
    for (const job of left) jobs.set(job.id, interrupted(job, now));
    if (left.length > 0) this.save(jobs);
    return [...jobs.values()];
  }

  flush(): Promise<void> {
    return this.file.flush();
  }

  private save(jobs: Map<string, JobView>): void {
    this.file.save({ version: 1, jobs: [...jobs.values()] });
  }

  private load(): Promise<Map<string, JobView>> {
    this.loading ??= this.file.read().then((parsed) => {
      const jobs = (parsed as Partial<HistoryFile> | null)?.jobs;
      return new Map((Array.isArray(jobs) ? jobs.filter(isJob) : []).map((job) => [job.id, job]));
    });
    return this.loading;
  }
}
