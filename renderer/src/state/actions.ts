// What the user can do. Each action calls the bridge; results arrive as events, and the job a call returns is
// applied at once so the row shows progress without waiting for the first event.
import { selectedNode } from './node.ts';
import type { LeftoverAction } from '../../../shared/api.ts';
import type { GalleryEntryView, JobView, LoadResult, ProcessView, ScanEntry, UpgradeAllResult } from '../../../shared/types.ts';
import { backendsStore, withoutProcess, withProcess } from './backends.ts';
import { galleryStore } from './gallery.ts';
import { jobsStore, withJob } from './jobs.ts';
import { bridge } from './session.ts';

export type BackendAction = 'install' | 'reinstall' | 'upgrade' | 'rollback' | 'delete';

function track(job: JobView): JobView {
  jobsStore.setState((s) => withJob(s, job));
  return job;
}

export async function runBackendAction(action: BackendAction, name: string): Promise<JobView> {
  const b = bridge();
  const ref = { node: selectedNode(), name };
  switch (action) {
    case 'install':
      return track(await b.install(ref));
    case 'reinstall':
      return track(await b.install({ ...ref, force: true }));
    case 'upgrade':
      return track(await b.upgrade(ref));
    case 'rollback':
      return track(await b.rollback(ref));
    case 'delete':
      return track(await b.delete(ref));
  }
}

/** Restores or removes a working directory LocalAI left behind; the rows change by events. */
export function resolveLeftover(name: string, action: LeftoverAction): Promise<void> {
  return bridge().resolveLeftover({ node: selectedNode(), name, action });
}

export async function upgradeAll(): Promise<UpgradeAllResult[]> {
  const results = await bridge().upgradeAll({ node: selectedNode() });
  for (const result of results) if (result.job) track(result.job);
  return results;
}

export async function cancelJob(id: string): Promise<JobView> {
  return track(await bridge().cancelJob({ node: selectedNode(), id }));
}

export function loadModel(backend: string, model: string): Promise<LoadResult> {
  return bridge().load({ node: selectedNode(), backend, model });
}

export function respawn(model: string): Promise<ProcessView> {
  return bridge().respawn({ node: selectedNode(), model });
}

/** Starts an exited or crashed model again, its model reloaded. */
export function restart(model: string): Promise<ProcessView> {
  return bridge().restart({ node: selectedNode(), model });
}

/** Fresh process views (CPU and memory move without events): each one is applied as if it were an event. */
export async function refreshProcesses(): Promise<void> {
  const processes = await bridge().processes({ node: selectedNode() });
  backendsStore.setState((s) => processes.reduce(withProcess, s));
}

export function stop(model: string): Promise<void> {
  return bridge().stop({ node: selectedNode(), model });
}

/**
 * Frees the model's memory and keeps its process; the row says so at once. A LocalAI server's model is stopped by
 * LocalAI, which no longer lists it: its row goes, as `hangar ps` drops it (there is nothing to restart).
 */
export async function unload(model: string): Promise<ProcessView> {
  const process = await bridge().unload({ node: selectedNode(), model });
  backendsStore.setState((s) => (process.runBy === 'localai' ? withoutProcess(s, model) : withProcess(s, process)));
  return process;
}

/** Every process whose cwd is, or was, inside the backends directory, started by Hangar or not. A pull, not an event. */
export function scanProcesses(): Promise<ScanEntry[]> {
  return bridge().scan({ node: selectedNode() });
}

/** Stops one process a scan found (Hangar's, or a stale one it did not start); the node refuses any other pid. */
export function stopProcess(pid: number): Promise<void> {
  return bridge().stopProcess({ node: selectedNode(), pid });
}

/** Picks the build of a meta backend this node installs (null: automatic again); the entry updates at once. */
export async function chooseVariant(name: string, capability: string | null): Promise<GalleryEntryView> {
  const entry = await bridge().chooseVariant({ node: selectedNode(), name, capability });
  galleryStore.setState((s) => ({ entries: s.entries.map((e) => (e.gallery === entry.gallery && e.name === entry.name ? entry : e)) }));
  return entry;
}
