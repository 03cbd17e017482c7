// What a rollout asks of one node: its upgrade started, its models back, a job still under way ended, its version.
import { setTimeout as sleep } from 'node:timers/promises';
import type { NodeApi } from '../../../shared/api.ts';
import { HangarError } from '../../../shared/errors.ts';
import type { JobView, RolloutView } from '../../../shared/types.ts';

/** The node's job, or why it has none: its galleries do not offer the version (a drift, not a failure). */
export async function startUpgrade(api: NodeApi, node: string, rollout: RolloutView): Promise<JobView | string> {
  if (rollout.version === null) return api.upgrade({ node, name: rollout.backend });
  try {
    return await api.installVersion({ node, name: rollout.backend, version: rollout.version });
  } catch (error) {
    if (error instanceof HangarError && error.code === 'not-found') return error.message;
    throw error;
  }
}

/** The models the backend served before the upgrade are served again, each process ready (Health OK) and fresh. */
export async function waitReady(
  api: NodeApi,
  wait: { node: string; backend: string; models: string[]; untilMs: number; everyMs: number },
  reaching: <T>(call: () => Promise<T>) => Promise<T>,
): Promise<void> {
  for (;;) {
    const processes = (await reaching(() => api.processes({ node: wait.node }))).filter((p) => p.backend === wait.backend);
    const missing = wait.models.filter((m) => !processes.some((p) => p.model === m && p.state === 'ready' && p.cwd !== 'stale'));
    if (missing.length === 0) return;
    if (Date.now() > wait.untilMs) throw new HangarError('failed', `upgraded, but ${missing.join(', ')} did not come back healthy`);
    await sleep(wait.everyMs);
  }
}

/** Cancels the node's install or upgrade of `backend` still under way, and waits for how it ends. */
export async function settleInFlight(api: NodeApi, node: string, backend: string): Promise<void> {
  const running = (await api.jobs({ node })).filter((j) => j.backend === backend && j.finishedAt === null);
  for (const job of running) {
    await api.cancelJob({ node, id: job.id }).catch(() => undefined);
    await api.waitJob({ node, id: job.id });
  }
}

export async function versionOn(api: NodeApi, node: string, backend: string): Promise<string | null> {
  return (await api.backends({ node })).find((b) => b.name === backend)?.version ?? null;
}
