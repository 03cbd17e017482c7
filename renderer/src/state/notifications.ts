// The Notifications view: what each node keeps (its finished jobs, the host's rollouts), so a reload or another
// viewer sees the same list, plus what happened in this page only (an action's error, a load's result).
import { useMemo } from 'react';
import { createStore, useStore } from 'zustand';
import type { JobView, RolloutView } from '../../../shared/types.ts';
import { useCluster } from './cluster.ts';
import { useNodes } from './node.ts';
import { bridge } from './session.ts';
import { useHistory, type Toast } from './toasts.ts';

export interface Notice {
  key: string;
  kind: 'error' | 'info';
  text: string;
  /** ms since epoch */
  at: number;
}

interface NotificationsState {
  /** Each node's finished jobs, by id, as the node keeps them. */
  jobsByNode: Record<string, Record<string, JobView>>;
  /** This viewer cleared the list at this moment (kept in the browser); earlier notices are hidden. */
  clearedAt: number;
}

const CLEARED_KEY = 'hangar.notifications.clearedAt';
const SHOWN_MAX = 300;

function storedClearedAt(): number {
  try {
    return Number(globalThis.localStorage?.getItem(CLEARED_KEY)) || 0;
  } catch {
    return 0;
  }
}

export const notificationsStore = createStore<NotificationsState>(() => ({ jobsByNode: {}, clearedAt: storedClearedAt() }));

const finished = (job: JobView) => job.finishedAt !== null;

/** A node's jobs as it lists them (the finished ones it keeps). */
export async function readJobs(node: string): Promise<void> {
  const jobs = await bridge().jobs({ node });
  notificationsStore.setState((s) => ({ jobsByNode: { ...s.jobsByNode, [node]: Object.fromEntries(jobs.filter(finished).map((j) => [j.id, j])) } }));
}

/** A job event of any node: a job that ended joins that node's list. */
export function applyJob(node: string, job: JobView): void {
  if (!finished(job)) return;
  notificationsStore.setState((s) => ({ jobsByNode: { ...s.jobsByNode, [node]: { ...s.jobsByNode[node], [job.id]: job } } }));
}

export function clearNotifications(): void {
  const now = Date.now();
  try {
    globalThis.localStorage?.setItem(CLEARED_KEY, String(now));
  } catch {
    // a browser that keeps nothing clears for this page only
  }
  notificationsStore.setState({ clearedAt: now });
}

const ENDED: Record<string, string> = { done: 'finished', failed: 'failed', cancelled: 'was cancelled' };

/** "upgrade echo failed: …", "upgrade echo finished: up to date". */
export function jobText(job: JobView): string {
  const outcome = job.state === 'done' && job.phase !== 'done' ? `: ${job.phase}` : '';
  return `${job.kind} ${job.backend} ${ENDED[job.state] ?? job.state}${outcome}${job.state === 'failed' && job.error ? `: ${job.error}` : ''}`;
}

/** How a rollout ended, naming every node that failed and why; null while it runs. */
export function rolloutNotice(rollout: RolloutView): Notice | null {
  if (rollout.finishedAt === null || rollout.state === 'running' || rollout.state === 'rolling-back') return null;
  const names = (step: RolloutView['nodes'][number]['step']) => rollout.nodes.filter((n) => n.step === step).map((n) => n.name);
  const failures = rollout.nodes.filter((n) => n.step === 'failed' || (n.reason ?? '').startsWith('rollback failed')).map((n) => `${n.name} failed: ${n.reason ?? 'no cause given'}`);
  const list = (label: string, nodes: string[]) => (nodes.length > 0 ? `${label} ${nodes.join(', ')}` : null);
  const parts =
    rollout.state === 'rolled-back'
      ? [list('rolled back', names('rolled-back')), ...failures]
      : [...failures, list('upgraded', names('upgraded')), list('not upgraded:', names('skipped'))];
  const verb = rollout.state === 'halted' ? 'halted' : rollout.state === 'rolled-back' ? 'rolled back' : 'done';
  return {
    key: `rollout:${rollout.id}:${rollout.state}`,
    kind: failures.length > 0 ? 'error' : 'info',
    text: `Rollout of ${rollout.backend} ${verb}${parts.some(Boolean) ? `: ${parts.filter(Boolean).join('; ')}` : ''}`,
    at: Date.parse(rollout.finishedAt),
  };
}

/** Every notice, newest first: each node's finished jobs (named by node when there are several), rollouts, this page's own. */
export function notices(jobsByNode: NotificationsState['jobsByNode'], labels: ReadonlyMap<string, string>, rollouts: readonly RolloutView[], local: readonly Toast[], clearedAt: number): Notice[] {
  const prefix = (node: string) => (labels.size > 1 ? `${labels.get(node) ?? node}: ` : '');
  const fromJobs = Object.entries(jobsByNode).flatMap(([node, jobs]) =>
    Object.values(jobs).map((job): Notice => ({ key: `job:${node}:${job.id}`, kind: job.state === 'failed' ? 'error' : 'info', text: prefix(node) + jobText(job), at: Date.parse(job.finishedAt!) })),
  );
  const fromRollouts = rollouts.map(rolloutNotice).filter((n): n is Notice => n !== null);
  const fromPage = local.map((t): Notice => ({ key: `page:${t.id}`, kind: t.kind, text: t.text, at: t.at }));
  return [...fromJobs, ...fromRollouts, ...fromPage]
    .filter((n) => n.at > clearedAt)
    .sort((a, b) => b.at - a.at)
    .slice(0, SHOWN_MAX);
}

export function useNotices(): Notice[] {
  const jobsByNode = useStore(notificationsStore, (s) => s.jobsByNode);
  const clearedAt = useStore(notificationsStore, (s) => s.clearedAt);
  const nodes = useNodes((s) => s.nodes);
  const rollouts = useCluster((s) => s.rollouts);
  const local = useHistory();
  return useMemo(() => notices(jobsByNode, new Map(nodes.map((n) => [n.id, n.label])), rollouts, local, clearedAt), [jobsByNode, nodes, rollouts, local, clearedAt]);
}
