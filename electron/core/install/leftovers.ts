// LocalAI's working directories beside a backend (`X.install-tmp`, `X.install-backup`, …), as LocalAI leaves them
// when it is stopped midway: listed, removed, or (a whole live tree renamed aside) put back.
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { HangarError } from '../../../shared/errors.ts';
import { WORKING_SUFFIXES, backendName } from '../../../shared/schemas.ts';
import { isDir, type BackendDirs } from './backend-dirs.ts';
import type { DirectoryKind } from './directory-read.ts';

/** A working directory: which backend it belongs to, and by which suffix. */
export interface Leftover {
  of: string;
  suffix: (typeof WORKING_SUFFIXES)[number];
}

/** LocalAI's names for a live tree renamed aside mid-swap (install, upgrade): the only leftovers worth restoring. */
const LOCALAI_BACKUP_SUFFIXES: readonly string[] = ['.install-backup', '.backup'];
/** Where Hangar 0.1 kept the rollback tree; moved under .hangar on start. */
export const LEGACY_PREVIOUS_SUFFIX = '.previous';

/** The backend a working directory belongs to, or null when `entry` is not one. */
export function leftoverOf(entry: string): Leftover | null {
  const suffix = WORKING_SUFFIXES.find((s) => entry.endsWith(s));
  const of = suffix ? entry.slice(0, -suffix.length) : '';
  return suffix && backendName.safeParse(of).success ? { of, suffix } : null;
}

/** True for a leftover that is a whole live tree renamed aside: with its backend gone, it can be put back. */
export function isBackup(leftover: Leftover): boolean {
  return LOCALAI_BACKUP_SUFFIXES.includes(leftover.suffix);
}

export function kindOf(entry: string): DirectoryKind {
  if (backendName.safeParse(entry).success) return 'backend';
  return leftoverOf(entry) ? 'leftover' : 'foreign';
}

/** Removes LocalAI's working directory `entry`; `touched` hears each name whose directory changed. */
export async function removeLeftover(dirs: BackendDirs, entry: string, touched: (name: string) => void): Promise<void> {
  const leftover = await existingLeftover(dirs, entry);
  await dirs.trash(leftover.of, join(dirs.dir, entry), false);
  touched(entry);
}

/** Puts a backup LocalAI left behind (`X.install-backup`, `X.backup`) back as X, when X is gone. Returns X. */
export async function restoreLeftover(dirs: BackendDirs, entry: string, touched: (name: string) => void): Promise<string> {
  const leftover = await existingLeftover(dirs, entry);
  if (!isBackup(leftover)) throw new HangarError('bad-input', `${entry} is a partial download, not a backup: it cannot be restored`);
  if (await isDir(dirs.liveDir(leftover.of))) throw new HangarError('conflict', `backend "${leftover.of}" is installed: ${entry} cannot replace it`);
  await rename(join(dirs.dir, entry), dirs.liveDir(leftover.of));
  touched(entry);
  touched(leftover.of);
  return leftover.of;
}

async function existingLeftover(dirs: BackendDirs, entry: string): Promise<Leftover> {
  const leftover = leftoverOf(entry);
  if (!leftover) throw new HangarError('not-found', `"${entry.slice(0, 80)}" is not a working directory of a backend`);
  if (!(await isDir(join(dirs.dir, entry)))) throw new HangarError('not-found', `${entry} is not in the backends directory`);
  return leftover;
}
