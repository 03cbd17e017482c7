// run.sh as LocalAI starts it (pkg/model/process.go startProcess): a run.sh with no execute bit for anyone is made
// 0700 first; one with any execute bit is started as it is, and fails if that bit is not this user's.
import { accessSync, constants, type Stats } from 'node:fs';
import { chmod, lstat } from 'node:fs/promises';

export const RUN_SH = 'run.sh';
const LOCALAI_RUN_MODE = 0o700;

/** True when run.sh has no execute bit at all: LocalAI (and Hangar) make it 0700 before starting it. */
export function lacksExecuteBits(stats: Stats): boolean {
  return process.platform !== 'win32' && (stats.mode & 0o111) === 0;
}

/**
 * LocalAI's step before a start: no execute bit for anyone → 0700. A run.sh that is a link is started as it is: its
 * target may be outside the tree, and is not the installer's to change.
 */
export async function makeRunnable(runSh: string): Promise<void> {
  const stats = await lstat(runSh);
  if (stats.isFile() && lacksExecuteBits(stats)) await chmod(runSh, LOCALAI_RUN_MODE);
}

/** Why this process cannot start the run.sh whose stats these are, even after makeRunnable; null when it can. */
export function whyNotRunnable(runSh: string, stats: Stats): string | null {
  if (process.platform === 'win32') return null;
  const mode = `mode ${(stats.mode & 0o7777).toString(8).padStart(4, '0')}, owner uid ${stats.uid}`;
  if (lacksExecuteBits(stats)) {
    const uid = process.getuid?.();
    return uid === 0 || uid === stats.uid ? null : `${RUN_SH} is not executable, and this user (uid ${uid}) cannot make it so (${mode})`;
  }
  try {
    accessSync(runSh, constants.X_OK);
    return null;
  } catch {
    return `${RUN_SH} is not executable by this user (${mode})`;
  }
}
