// Where each tree of a backend lives in the backends directory, and the moves between them. Live backends are
// `<backends>/<name>`, exactly where LocalAI looks for them. Everything else Hangar keeps lives under
// `<backends>/.hangar/` (staging, the tree being replaced, the rollback tree, trash): LocalAI treats every
// subdirectory with a run.sh as a backend, and `.hangar` has none, so it never sees a rollback tree as a runnable
// backend, while every move stays a rename on the same filesystem.
import { randomBytes } from 'node:crypto';
import { renameSync } from 'node:fs';
import { lstat, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { HangarError } from '../../../shared/errors.ts';
import { backendName } from '../../../shared/schemas.ts';
import { messageOf } from '../../../shared/error-text.ts';

export const WORK_DIR = '.hangar';
/** LocalAI creates every directory it makes in the backends directory with this mode. */
export const LOCALAI_DIR_MODE = 0o750;
const IN_USE_CODES = new Set(['EBUSY', 'EACCES', 'EPERM']);
const IN_USE_RETRIES = 10;
const IN_USE_DELAY_MS = 200;

export function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

/** One line naming the backend and the cause; keeps the code of a HangarError. */
export function backendError(name: string, err: unknown): HangarError {
  const message = messageOf(err);
  if (message.startsWith(`backend "${name}"`) && err instanceof HangarError) return err;
  return new HangarError(err instanceof HangarError ? err.code : 'failed', `backend "${name}": ${message}`);
}

export async function isDir(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isDirectory();
  } catch (err) {
    if (errno(err) === 'ENOENT') return false;
    throw err;
  }
}

/** The entries of `dir`; none when it does not exist. */
export async function names(dir: string): Promise<string[]> {
  return readdir(dir).catch((err: unknown) => {
    if (errno(err) === 'ENOENT') return [];
    throw err;
  });
}

export class BackendDirs {
  readonly work: string;

  constructor(readonly dir: string) {
    this.work = join(dir, WORK_DIR);
  }

  liveDir(name: string): string {
    const checked = backendName.safeParse(name);
    if (!checked.success) {
      throw new HangarError('bad-input', `bad backend name "${name.slice(0, 40)}": ${checked.error.issues[0]?.message ?? 'invalid'}`);
    }
    return join(this.dir, name);
  }

  /** Where the rollback tree of `name` lives. */
  previousDir(name: string): string {
    this.liveDir(name);
    return join(this.work, 'previous', name);
  }

  /** Where the live tree waits, renamed aside, while a swap's new tree is checked. */
  backupDir(name: string): string {
    return join(this.work, 'backup', name);
  }

  /** A fresh name in staging or the trash: several fetches or removals of one backend may run at once. */
  scratch(kind: 'staging' | 'trash', name: string): string {
    return join(this.work, kind, `${name}.${randomBytes(6).toString('hex')}`);
  }

  /** Renames `dir` into the trash, then deletes it: a crash midway leaves only trash, emptied on the next start. */
  async trash(name: string, dir: string, live: boolean): Promise<void> {
    const target = this.scratch('trash', name);
    await mkdir(join(this.work, 'trash'), { recursive: true });
    if (live) await this.renameLive(name, dir, target);
    else await rename(dir, target);
    await rm(target, { recursive: true, force: true });
  }

  /**
   * Renames the live dir to `to`. With `incoming`, that is renamed into the live place at once, nothing run between
   * the two renames but `between` (a crash test's hook): a process starting the backend meanwhile (LocalAI loading a
   * model) finds its directory missing for two system calls, not for turns of the event loop. If the second rename
   * fails, the live tree is put back. On Windows a process whose cwd it is blocks the rename: retry a bounded time,
   * then "in use".
   */
  async renameLive(name: string, from: string, to: string, incoming?: string, between?: () => void): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        renameSync(from, to);
        break;
      } catch (err) {
        const retryable = process.platform === 'win32' && IN_USE_CODES.has(errno(err) ?? '');
        if (!retryable) throw backendError(name, err);
        if (attempt >= IN_USE_RETRIES) throw new HangarError('conflict', `backend "${name}" is in use: its directory cannot be renamed`);
        await sleep(IN_USE_DELAY_MS);
      }
    }
    if (incoming === undefined) return;
    between?.();
    try {
      renameSync(incoming, from);
    } catch (err) {
      renameSync(to, from);
      throw backendError(name, err);
    }
  }
}
