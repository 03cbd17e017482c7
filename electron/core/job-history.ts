// Finished jobs, kept in `<home>/state/jobs.json`, so a client that waits on a job after it was pruned from memory,
// or after the host restarted, still learns how it ended.
import { join } from 'node:path';
import type { JobView } from '../../shared/types.ts';
import { CoalescedFile } from './coalesced-file.ts';

const KEPT = 500;

interface HistoryFile {
  version: 1;
  jobs: JobView[];
}

function isFinishedJob(value: unknown): value is JobView {
  const job = value as JobView;
  return typeof job === 'object' && job !== null && typeof job.id === 'string' && typeof job.state === 'string' && typeof job.finishedAt === 'string';
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
    this.file.save({ version: 1, jobs: [...jobs.values()] });
  }

  flush(): Promise<void> {
    return this.file.flush();
  }

  private load(): Promise<Map<string, JobView>> {
    this.loading ??= this.file.read().then((parsed) => {
      const jobs = (parsed as Partial<HistoryFile> | null)?.jobs;
      return new Map((Array.isArray(jobs) ? jobs.filter(isFinishedJob) : []).map((job) => [job.id, job]));
    });
    return this.loading;
  }
}
