import { createStore, useStore } from 'zustand';
import type { JobView } from '../../../shared/types.ts';

export interface JobsState {
  byId: Record<string, JobView>;
  /** The most recent job per backend name: what its row or gallery entry shows. */
  latestByBackend: Record<string, string>;
}

export const emptyJobs: JobsState = { byId: {}, latestByBackend: {} };

export function fromJobs(jobs: JobView[]): JobsState {
  return jobs.reduce(withJob, emptyJobs);
}

export function withJob(state: JobsState, job: JobView): JobsState {
  const currentId = state.latestByBackend[job.backend];
  const current = currentId === undefined ? undefined : state.byId[currentId];
  const latest = !current || current.id === job.id || current.startedAt <= job.startedAt;
  return {
    byId: { ...state.byId, [job.id]: job },
    latestByBackend: latest && currentId !== job.id ? { ...state.latestByBackend, [job.backend]: job.id } : state.latestByBackend,
  };
}

export function isActive(job: JobView): boolean {
  return job.state === 'queued' || job.state === 'running';
}

export const jobsStore = createStore<JobsState>(() => emptyJobs);

/** Finished jobs whose message the user dismissed; kept apart so a full re-read does not bring them back. */
const dismissedStore = createStore<Record<string, true>>(() => ({}));

export function dismissJob(id: string): void {
  dismissedStore.setState({ [id]: true });
}

export function useDismissed(id: string | undefined): boolean {
  return useStore(dismissedStore, (s) => id !== undefined && s[id] === true);
}

/** The latest job for a backend, or undefined. The selected object is the store's own, so unrelated jobs do not re-render. */
export function useLatestJob(backend: string): JobView | undefined {
  return useStore(jobsStore, (s) => {
    const id = s.latestByBackend[backend];
    return id === undefined ? undefined : s.byId[id];
  });
}
