// A start after a crash: interrupted swaps finished or undone, staging and trash emptied, Hangar 0.1's rollback
// trees moved under .hangar. LocalAI's own working directories are left as LocalAI leaves them at its own start
// (it does nothing with them): they are listed, to be restored or removed.
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { backendName } from '../../../shared/schemas.ts';
import { removeInterruptedWrites } from '../state-file.ts';
import { isDir, names, type BackendDirs } from './backend-dirs.ts';
import { LEGACY_PREVIOUS_SUFFIX, leftoverOf } from './leftovers.ts';
import type { Swaps } from './swap.ts';
import type { InterruptedSwap, JournalEntry, SwapJournal } from './swap-journal.ts';

/** What recover() did: one line per thing, and the swaps a crash interrupted (to be told and followed up). */
export interface Recovered {
  done: string[];
  interrupted: InterruptedSwap[];
}

/** Why an interrupted swap was undone, as its job says it. */
export function interruption(phase: JournalEntry['phase']): string {
  return phase === 'gate' ? 'the host stopped during the health gate' : 'the host stopped during the swap';
}

export async function recover(dirs: BackendDirs, journal: SwapJournal, swaps: Swaps): Promise<Recovered> {
  const done: string[] = [...(await removeInterruptedWrites(dirs.work))];
  for (const kind of ['staging', 'trash']) {
    const left = await names(join(dirs.work, kind));
    if (left.length === 0) continue;
    await rm(join(dirs.work, kind), { recursive: true, force: true });
    if (kind === 'staging') done.push(...left.map((n) => `${n.slice(0, n.lastIndexOf('.'))}: removed stale staging`));
  }
  const interrupted: InterruptedSwap[] = [];
  for (const name of new Set([...(await names(join(dirs.work, 'backup'))), ...(await journal.names())])) {
    if (!backendName.safeParse(name).success) continue;
    const { said, swap } = await recoverSwap(dirs, swaps, name, await journal.read(name));
    await journal.remove(name);
    if (said) done.push(`${name}: ${said}`);
    if (swap) interrupted.push(swap);
  }
  for (const entry of await names(dirs.dir)) {
    done.push(...(await recoverSibling(dirs, entry)));
  }
  return { done, interrupted };
}

/**
 * One swap a host did not live to finish. Until its gate passed (the journal says 'settling'), it is undone: the
 * tree live before it is live again. After, or with no journal (an older Hangar's swap), it is finished.
 */
async function recoverSwap(dirs: BackendDirs, swaps: Swaps, name: string, entry: JournalEntry | null): Promise<{ said: string | null; swap: InterruptedSwap | null }> {
  const [hasBackup, hasLive] = await Promise.all([isDir(dirs.backupDir(name)), isDir(dirs.liveDir(name))]);
  const gatePassed = entry === null || entry.phase === 'settling';
  const renamed = hasLive && (hasBackup || entry?.replacing === false);
  let said: string | null = null;
  if (hasBackup && !hasLive) {
    await rename(dirs.backupDir(name), dirs.liveDir(name));
    said = 'put the live tree back after an interrupted swap';
  } else if (hasBackup && gatePassed) {
    await swaps.settleReplaced(name);
    said = 'finished an interrupted swap';
  } else if (entry && !gatePassed && renamed) {
    await swaps.undo(name, entry.swap, hasBackup);
  }
  if (!entry) return { said, swap: null };
  // The gate's entry is written as the gate begins: renames found done mean the gate had begun all the same.
  const phase = entry.phase === 'swapping' && renamed ? 'gate' : entry.phase;
  if (!gatePassed && renamed) said = `swapped back: ${interruption(phase)}`;
  const outcome = gatePassed ? 'finished' : 'rolled back';
  return { said, swap: { name, phase, outcome, replacing: entry.replacing, note: entry.note } };
}

async function recoverSibling(dirs: BackendDirs, entry: string): Promise<string[]> {
  const leftover = leftoverOf(entry);
  if (leftover?.suffix !== LEGACY_PREVIOUS_SUFFIX) return [];
  const name = leftover.of;
  const path = join(dirs.dir, entry);
  if (await isDir(dirs.previousDir(name))) {
    await dirs.trash(name, path, false);
    return [`${name}: removed an older rollback tree`];
  }
  await mkdir(join(dirs.work, 'previous'), { recursive: true });
  await rename(path, dirs.previousDir(name));
  return [`${name}: moved its rollback tree out of the backends listing`];
}
