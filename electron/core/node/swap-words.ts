// What a swap job says: its verb (an install over an older build is an upgrade, over a newer a downgrade), why its
// gate failed and what it rolled back to, what it left running, and how the jobs of swaps a host did not live to
// finish ended.
import type { DirectoryStop } from '../supervisor/index.ts';
import { compareVersions } from '../../../shared/version-order.ts';
import { interruption, type InterruptedSwap } from '../install/store.ts';
import type { JobRunner } from '../jobs.ts';

export interface VersionChange {
  verb: string;
  from: string | null;
  to: string | null;
  /** Whether a build was live before (a first install replaces none). */
  replacing: boolean;
}

/** What a swap does, in its failure's words: an install over an older build is an upgrade, over a newer a downgrade. */
export function verbOf(upgrade: boolean, from: string | null, to: string | null, replacing: boolean): string {
  if (upgrade) return 'upgrade';
  if (!replacing) return 'install';
  if (from === null || to === null || from === to) return 'reinstall';
  return compareVersions(to, from) > 0 ? 'upgrade' : 'downgrade';
}

/**
 * "upgrade echo to 2.0.0 failed: WHY; rolled back to 1.0.0", or for a first install ("install echo 1.0.0 failed:
 * WHY"), that nothing is installed.
 */
export function gateFailure(name: string, change: VersionChange, why: string): string {
  const version = (v: string | null) => v ?? 'the unversioned build';
  const after = change.replacing ? `rolled back to ${version(change.from)}` : `${name} is not installed`;
  const what = change.replacing ? `${name} to ${version(change.to)}` : change.to === null ? name : `${name} ${change.to}`;
  return `${change.verb} ${what} failed: ${why}; ${after}`;
}

/** What a swap did to the processes Hangar did not start in the directory it replaced, or null when there were none. */
export function unsupervisedNotice(dir: string, outcome: Pick<DirectoryStop, 'leftRunning' | 'stoppedUnsupervised'>): string | null {
  const list = (processes: DirectoryStop['leftRunning']) => processes.map((p) => `pid ${p.pid} (${p.command || 'no command line'})`).join(', ');
  const notes = [];
  if (outcome.stoppedUnsupervised.length > 0) notes.push(`stopped, as asked, what Hangar did not start in ${dir}: ${list(outcome.stoppedUnsupervised)}`);
  if (outcome.leftRunning.length > 0) notes.push(`left running what Hangar did not start in ${dir}: ${list(outcome.leftRunning)}; stop-process PID stops one, --stop-unsupervised stops them all`);
  return notes.length > 0 ? notes.join('; ') : null;
}

/**
 * Ends the jobs of swaps a previous host run did not live to finish, as its start finished them: a swap stopped
 * before its gate passed was undone, one stopped after was finished. (What the swaps stopped runs again: see the
 * supervisor's start.)
 */
export async function endInterrupted(runner: JobRunner, swaps: InterruptedSwap[]): Promise<void> {
  for (const { name, phase, outcome, replacing, note } of swaps) {
    if (!note?.job) continue;
    const rolledBack = outcome === 'rolled back';
    const change = { verb: note.verb, from: note.from, to: note.to, replacing };
    await runner.ended({
      ...note.job,
      node: runner.node,
      backend: name,
      state: rolledBack ? 'failed' : 'done',
      phase: rolledBack ? 'rolled back' : 'done',
      bytes: 0,
      totalBytes: null,
      error: rolledBack ? gateFailure(name, change, interruption(phase)) : null,
      notice: rolledBack ? null : 'the host stopped after the new build passed its health gate; the swap was finished when it started again',
      finishedAt: new Date().toISOString(),
    });
  }
}
