// How an upgrade on a LocalAI worker ended, in words: the version the worker reports against what the gallery offered,
// and the processes a failed one left stopped.
import type { WorkerBackend } from './protocol.ts';

export interface UpgradeTarget {
  version: string | null;
  digest: string | null;
}

/** Why the worker's row after an upgrade is not what the gallery offered, or null when it is. */
export function upgradeProblem(before: WorkerBackend, after: WorkerBackend | undefined, target: UpgradeTarget): string | null {
  if (!after) return `the worker said the upgrade succeeded, but its backend.list no longer has ${before.name}`;
  const got = (row: WorkerBackend) => (target.version !== null ? row.version : row.digest) || null;
  const wanted = target.version ?? target.digest;
  if (wanted === null || got(after) === wanted) return null;
  const said = (value: string | null) => value ?? 'no version';
  if (got(after) === got(before)) {
    return (
      `the worker said the upgrade succeeded but still reports ${said(got(after))}, not ${wanted}: LocalAI's worker reads its gallery ` +
      'index from a cache it keeps for up to an hour, so it reinstalled what it had; upgrade again later, or restart the worker'
    );
  }
  return `the worker said the upgrade succeeded but reports ${said(got(after))}, not ${wanted}`;
}

/** What a failed upgrade leaves behind: the processes the worker stopped before it failed. */
export function stoppedNote(models: string[]): string {
  if (models.length === 0) return '';
  return `; the worker had stopped ${models.join(', ')} first: LocalAI's frontend starts ${models.length === 1 ? 'it' : 'them'} again on the next request`;
}
