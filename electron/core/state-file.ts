// Files in the home's state directory are replaced whole: written to a temporary sibling, flushed to disk, then
// renamed over the old one, so a reader or a crash sees the old file or the new one. A write that fails (a full
// disk, a read-only mount) removes its temporary file and throws an error that names the file and the cause.
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { messageOf } from '../../shared/error-text.ts';

const TEMP_SUFFIX = '.tmp';
let temps = 0;

export class StateWriteError extends Error {
  constructor(
    readonly path: string,
    cause: unknown,
  ) {
    super(`cannot write ${path}: ${reasonOf(cause)}`, { cause });
    this.name = 'StateWriteError';
  }
}

/** Process warnings about state files carry this name. */
export const STATE_WARNING = 'HangarStateWarning';

/**
 * For a write nobody waits on: says in the host's log (a process warning) that it failed. The caller says it once
 * until a write succeeds again; the next change writes the whole file again.
 */
export function warnWriteFailed(error: Error): void {
  process.emitWarning(`${error.message}; the next change writes it whole again (said once until a write succeeds)`, STATE_WARNING);
}

/** The parsed file, or null when it is missing or not JSON. */
export async function readJsonFile(path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as unknown;
  } catch {
    return null;
  }
}

/** `value` as indented JSON, atomically; the directory is created if need be. */
export async function writeJsonFile(path: string, value: unknown, options: { mode?: number } = {}): Promise<void> {
  await mkdir(dirname(path), { recursive: true }).catch(() => undefined);
  await writeFileAtomic(path, JSON.stringify(value, null, 2) + '\n', options);
}

export async function writeFileAtomic(path: string, data: string, options: { mode?: number } = {}): Promise<void> {
  const temp = tempFor(path);
  try {
    const handle = await open(temp, 'w', options.mode ?? 0o644);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw new StateWriteError(path, error);
  }
}

/** The same, blocking: for a host that must have the file written before it answers (the desktop's own settings). */
export function writeFileAtomicSync(path: string, data: string, options: { mode?: number } = {}): void {
  const temp = tempFor(path);
  try {
    const fd = openSync(temp, 'w', options.mode ?? 0o644);
    try {
      writeFileSync(fd, data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw new StateWriteError(path, error);
  }
}

function tempFor(path: string): string {
  return `${path}.${process.pid}.${++temps}${TEMP_SUFFIX}`;
}

/**
 * Removes the temporary files that writes cut short by a crash or a power cut left in `dir`, and says what it
 * removed. A file named for a process that still runs (`NAME.PID[.N].tmp`: a CLI writing beside the host) is left.
 */
export async function removeInterruptedWrites(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const leftovers = names.filter((name) => name.endsWith(TEMP_SUFFIX) && !writerRuns(name));
  await Promise.all(leftovers.map((name) => rm(join(dir, name), { force: true })));
  if (leftovers.length === 0) return [];
  return [`removed ${leftovers.length === 1 ? 'a temporary file' : `${leftovers.length} temporary files`} that interrupted writes left in ${dir}`];
}

function writerRuns(name: string): boolean {
  const pid = /\.(\d+)(?:\.\d+)?\.tmp$/.exec(name)?.[1];
  if (pid === undefined) return false;
  // Signal 0 asks only whether the pid exists, on every platform (no /proc read).
  try {
    process.kill(Number(pid), 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** "no space left on device" from Node's "ENOSPC: no space left on device, write". */
function reasonOf(error: unknown): string {
  const message = messageOf(error);
  return /^E[A-Z]+: ([^,]+)/.exec(message)?.[1] ?? message.split('\n')[0]!;
}
