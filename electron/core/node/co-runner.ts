// Another runtime that starts processes from this node's backend directories: a LocalAI server that shares them. The
// node does not supervise its processes, but shows them, lets people respawn and unload them, and makes every swap
// bring them back on the new tree, as it does its own.
import { randomUUID } from 'node:crypto';
import type { JobKind, NodeEvent, ProcessView } from '../../../shared/types.ts';
import type { InterruptedSwap } from '../install/store.ts';
import type { JobRunner } from '../jobs.ts';
import type { DirIdentity } from '../supervisor/identity.ts';

/** What the node gives a co-runner when it starts. */
export interface CoRunnerContext {
  /** The node's id, as its events name it. */
  node: string;
  backendsDir: string;
  /** The pids of the processes the node supervises itself: never the co-runner's. */
  ownPids(): Set<number>;
  /** Whether a swap brings the co-runner's models back on the new tree (the node's `localaiRespawn` setting). */
  respawnAfterSwap(): boolean;
  /** Runs `work` on one backend's models beside loads and stops, never during a swap of it (the node's backend lock). */
  shared<T>(backend: string, work: () => Promise<T>): Promise<T>;
  emit(event: NodeEvent): void;
  /** Records, as a finished job of this node (listed, notified, kept), what it did about a swap Hangar did not make. */
  recordJob(job: { kind: JobKind; backend: string; startedAt: string; error: string | null; notice: string | null }): void;
  /** Its models a swap was reloading when the host stopped (from the swaps' journals): loaded again if it lost them. */
  interruptedReloads: Array<{ model: string; backend: string }>;
}

export interface ReloadOptions {
  signal?: AbortSignal;
  /** Models found on the replaced tree besides those asked for: awaited before they are stopped. */
  found?(models: string[]): Promise<void>;
}

export interface CoRunner {
  /** Who it is, in messages ("LocalAI"). */
  readonly name: string;
  attach(context: CoRunnerContext): void;
  detach(): Promise<void>;
  /** Its models, each with the process found on this machine (pid 0 when none is), as the views show them. */
  processes(): ProcessView[];
  owns(model: string): boolean;
  /** The pids of its processes, which a swap leaves to it rather than naming them as left running. */
  pids(): number[];
  /** Its models whose processes run from the directory `identity` names: what a swap of `backend` replaces under them. */
  modelsIn(backend: string, identity: DirIdentity): Promise<string[]>;
  /**
   * Brings these models back on the live tree of `backend`, one at a time (stopped, then loaded again), each proven
   * by a process of it running from that tree, then any other of its processes still on the replaced tree (a model
   * loaded meanwhile), each told to `found` before it is stopped; resolves with what it did ('' for nothing), rejects
   * at the first that does not come back, and at once when `signal` aborts.
   */
  reload(backend: string, models: string[], options?: ReloadOptions): Promise<string>;
  /** Stops these models and loads nothing (their backend is gone). */
  unload(models: string[]): Promise<void>;
  respawn(model: string): Promise<ProcessView>;
  /** Whether it runs a backend of this name now; null when it cannot tell (its link is down). */
  knows(backend: string): boolean | null;
}

/** What the node gives its co-runner: its own parts, its jobs, and the reloads its swaps' journals left undone. */
export function coRunnerContext(parts: {
  node: string;
  backendsDir: string;
  ownPids(): Set<number>;
  respawnAfterSwap(): boolean;
  shared: CoRunnerContext['shared'];
  emit(event: NodeEvent): void;
  jobs: Pick<JobRunner, 'ended'>;
  interrupted: InterruptedSwap[];
}): CoRunnerContext {
  const { jobs, interrupted, ...own } = parts;
  return {
    ...own,
    recordJob: (job) =>
      void jobs.ended({
        ...job,
        id: randomUUID(),
        node: parts.node,
        state: job.error ? 'failed' : 'done',
        phase: job.error ? 'failed' : 'done',
        bytes: 0,
        totalBytes: null,
        finishedAt: new Date().toISOString(),
      }),
    interruptedReloads: interrupted.flatMap((swap) => (swap.note?.coModels ?? []).map((model) => ({ model, backend: swap.name }))),
  };
}
