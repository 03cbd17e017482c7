// The installed-backends directory: listing, staging, validation, the atomic swap, rollback, removal and
// crash recovery. Working dirs beside `<name>`: `.install-tmp` (staging, also used as trash), `.install-backup`
// (the live tree while a swap is under way) and `.previous` (the one kept older version).
import { chmod, lstat, mkdir, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { HangarError } from '../../../shared/errors.ts';
import { WORKING_SUFFIXES, backendName } from '../../../shared/schemas.ts';
import { METADATA_FILE, parseMetadata, writeMetadataFile, type BackendMetadata } from './metadata.ts';

export type { BackendMetadata } from './metadata.ts';

export interface InstalledBackend {
  name: string;
  dir: string;
  metadata: BackendMetadata | null;
  /** Why the backend cannot run, e.g. 'metadata.json is corrupt: <cause>' or 'run.sh is missing'. */
  broken: string | null;
  /** Metadata of `<name>.previous`, if it exists. */
  previous: BackendMetadata | null;
  hasPrevious: boolean;
}

export type SwapStep = 'staged' | 'backup-renamed' | 'live-renamed' | 'cleanup-done';

export interface SwapHooks {
  /** Called with the live dir path right before it is renamed (the node stops its processes here). */
  beforeSwap?(liveDir: string): Promise<void>;
  /** Observes each step as it completes (progress; tests use it to crash the process at each step). */
  onStep?(step: SwapStep): void | Promise<void>;
}

interface Paths {
  live: string;
  staging: string;
  backup: string;
  previous: string;
}

const RUN_SH = 'run.sh';
const IN_USE_CODES = new Set(['EBUSY', 'EACCES', 'EPERM']);
const IN_USE_RETRIES = 10;
const IN_USE_DELAY_MS = 200;

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

/** One line naming the backend and the cause; keeps the code of a HangarError. */
export function backendError(name: string, err: unknown): HangarError {
  const message = err instanceof Error ? err.message : String(err);
  if (message.startsWith(`backend "${name}"`) && err instanceof HangarError) return err;
  return new HangarError(err instanceof HangarError ? err.code : 'failed', `backend "${name}": ${message}`);
}

async function isDir(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isDirectory();
  } catch (err) {
    if (errno(err) === 'ENOENT') return false;
    throw err;
  }
}

export class BackendStore {
  constructor(readonly dir: string) {}

  liveDir(name: string): string {
    const checked = backendName.safeParse(name);
    if (!checked.success) {
      throw new HangarError('bad-input', `bad backend name "${name.slice(0, 40)}": ${checked.error.issues[0]?.message ?? 'invalid'}`);
    }
    return join(this.dir, name);
  }

  async list(): Promise<InstalledBackend[]> {
    const entries = await readdir(this.dir, { withFileTypes: true }).catch((err: unknown) => {
      if (errno(err) === 'ENOENT') return [];
      throw err;
    });
    const names = entries.filter((e) => e.isDirectory() && backendName.safeParse(e.name).success).map((e) => e.name);
    const found = await Promise.all(names.sort().map((name) => this.inspect(name)));
    return found.filter((b): b is InstalledBackend => b !== null);
  }

  async get(name: string): Promise<InstalledBackend | null> {
    this.liveDir(name);
    return this.inspect(name);
  }

  /** Creates a fresh empty `<name>.install-tmp` (removing stale staging) and returns its path. */
  async stage(name: string): Promise<string> {
    const { staging } = this.paths(name);
    await rm(staging, { recursive: true, force: true });
    await mkdir(this.dir, { recursive: true });
    await mkdir(staging);
    return staging;
  }

  /** Throws a HangarError naming the backend if the staged tree is not a valid backend. Makes run.sh executable. */
  async validate(name: string, stagedDir: string): Promise<void> {
    const runSh = join(stagedDir, RUN_SH);
    const stats = await stat(runSh).catch((err: unknown) => {
      if (errno(err) === 'ENOENT') return null;
      throw err;
    });
    if (stats === null) throw new HangarError('bad-input', `backend "${name}": the tree has no ${RUN_SH}`);
    if (!stats.isFile()) throw new HangarError('bad-input', `backend "${name}": ${RUN_SH} is not a regular file`);
    if ((stats.mode & 0o111) !== 0o111) await chmod(runSh, (stats.mode & 0o777) | 0o111);
  }

  async writeMetadata(dir: string, meta: BackendMetadata): Promise<void> {
    await writeMetadataFile(dir, meta);
  }

  /**
   * Swaps the staged tree in: rename(live, .install-backup), rename(staged, live); the old .previous is removed and
   * the backup becomes .previous. Rolls back on failure. First install: just the rename.
   */
  async commit(name: string, hooks: SwapHooks = {}): Promise<void> {
    const p = this.paths(name);
    if (!(await isDir(p.staging))) throw new HangarError('not-found', `backend "${name}": nothing is staged`);
    await hooks.onStep?.('staged');
    await this.swapIn(name, p, p.staging, hooks, () => this.keepAsPrevious(p));
  }

  /** One swap back: live <-> .previous. */
  async rollback(name: string, hooks: SwapHooks = {}): Promise<void> {
    const p = this.paths(name);
    if (!(await isDir(p.previous))) throw new HangarError('not-found', `backend "${name}" has no previous version to roll back to`);
    await this.swapIn(name, p, p.previous, hooks, () => rename(p.backup, p.previous));
  }

  /**
   * rename(live, .install-backup), then rename(incoming, live); if the second rename fails the backup goes back.
   * `settle` then decides what becomes of the backup.
   */
  private async swapIn(name: string, p: Paths, incoming: string, hooks: SwapHooks, settle: () => Promise<void>): Promise<void> {
    const hadLive = await isDir(p.live);
    if (hadLive) {
      await rm(p.backup, { recursive: true, force: true });
      await hooks.beforeSwap?.(p.live);
      await this.renameLive(name, p.live, p.backup);
      await hooks.onStep?.('backup-renamed');
    }
    try {
      await rename(incoming, p.live);
    } catch (err) {
      if (hadLive) await rename(p.backup, p.live);
      throw backendError(name, err);
    }
    await hooks.onStep?.('live-renamed');
    if (hadLive) await settle();
    await hooks.onStep?.('cleanup-done');
  }

  /** Removes the backend, live and previous (meta siblings pointing at it are the caller's concern). */
  async remove(name: string, hooks: SwapHooks = {}): Promise<void> {
    const p = this.paths(name);
    const [hasLive, hasPrevious] = await Promise.all([isDir(p.live), isDir(p.previous)]);
    if (!hasLive && !hasPrevious) throw new HangarError('not-found', `backend "${name}" is not installed`);
    if (hasPrevious) await this.trash(p, p.previous);
    if (hasLive) {
      await hooks.beforeSwap?.(p.live);
      await this.trash(p, p.live, name);
    }
  }

  /** Writes a meta backend dir holding only metadata.json. */
  async writeMeta(name: string, meta: BackendMetadata): Promise<void> {
    const live = this.liveDir(name);
    if (await stat(join(live, RUN_SH)).then(() => true, () => false)) {
      throw new HangarError('conflict', `backend "${name}" is a concrete backend; it cannot become a meta backend`);
    }
    await mkdir(live, { recursive: true });
    await writeMetadataFile(live, meta);
  }

  /** On start: finishes or rolls back any interrupted swap and removes stale staging. Returns what it did. */
  async recover(): Promise<string[]> {
    const entries = await readdir(this.dir).catch((err: unknown) => {
      if (errno(err) === 'ENOENT') return [];
      throw err;
    });
    const names = new Set<string>();
    for (const entry of entries) {
      const suffix = WORKING_SUFFIXES.find((s) => entry.endsWith(s));
      const base = suffix ? entry.slice(0, -suffix.length) : '';
      if (suffix && backendName.safeParse(base).success) names.add(base);
    }
    const done: string[] = [];
    for (const name of [...names].sort()) done.push(...(await this.recoverOne(name)));
    return done;
  }

  async discard(name: string): Promise<void> {
    await rm(this.paths(name).staging, { recursive: true, force: true });
  }

  private async recoverOne(name: string): Promise<string[]> {
    const p = this.paths(name);
    const done: string[] = [];
    const hasBackup = await isDir(p.backup);
    if (hasBackup && !(await isDir(p.live))) {
      await rename(p.backup, p.live);
      done.push(`${name}: put the live tree back after an interrupted swap`);
    }
    if (await isDir(p.staging)) {
      await rm(p.staging, { recursive: true, force: true });
      done.push(`${name}: removed stale staging`);
    }
    if (hasBackup && (await isDir(p.backup))) {
      await this.keepAsPrevious(p);
      done.push(`${name}: finished an interrupted swap, keeping the replaced tree as previous`);
    }
    return done;
  }

  /** backup -> .previous; an older .previous goes through the trash name first so no half tree is ever visible. */
  private async keepAsPrevious(p: Paths): Promise<void> {
    if (await isDir(p.previous)) await this.trash(p, p.previous);
    await rename(p.backup, p.previous);
  }

  /** Renames `dir` to the staging name, then deletes it: a crash midway leaves only stale staging behind. */
  private async trash(p: Paths, dir: string, inUseName?: string): Promise<void> {
    await rm(p.staging, { recursive: true, force: true });
    if (inUseName) await this.renameLive(inUseName, dir, p.staging);
    else await rename(dir, p.staging);
    await rm(p.staging, { recursive: true, force: true });
  }

  /** Renames the live dir. On Windows a process whose cwd it is blocks the rename: retry a bounded time, then "in use". */
  private async renameLive(name: string, from: string, to: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await rename(from, to);
      } catch (err) {
        const retryable = process.platform === 'win32' && IN_USE_CODES.has(errno(err) ?? '');
        if (!retryable) throw backendError(name, err);
        if (attempt >= IN_USE_RETRIES) throw new HangarError('conflict', `backend "${name}" is in use: its directory cannot be renamed`);
        await sleep(IN_USE_DELAY_MS);
      }
    }
  }

  private paths(name: string): Paths {
    const live = this.liveDir(name);
    return { live, staging: `${live}.install-tmp`, backup: `${live}.install-backup`, previous: `${live}.previous` };
  }

  private async inspect(name: string): Promise<InstalledBackend | null> {
    const p = this.paths(name);
    if (!(await stat(p.live).then((s) => s.isDirectory(), () => false))) return null;
    const [current, hasPrevious] = await Promise.all([readMetadata(p.live, name), isDir(p.previous)]);
    let broken = current.broken;
    if (broken === null && !current.metadata?.metaBackendFor) {
      const runSh = await stat(join(p.live, RUN_SH)).catch(() => null);
      if (!runSh?.isFile()) broken = `${RUN_SH} is missing`;
    }
    const previous = hasPrevious ? (await readMetadata(p.previous, name)).metadata : null;
    return { name, dir: p.live, metadata: current.metadata, broken, previous, hasPrevious };
  }
}

async function readMetadata(dir: string, name: string): Promise<{ metadata: BackendMetadata | null; broken: string | null }> {
  const path = join(dir, METADATA_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if (errno(err) === 'ENOENT') return { metadata: null, broken: null };
    return { metadata: null, broken: `${METADATA_FILE} is unreadable: ${errno(err) ?? String(err)}` };
  }
  try {
    const metadata = parseMetadata(text, name, '');
    if (metadata.installedAt === '') metadata.installedAt = (await stat(path)).mtime.toISOString();
    return { metadata, broken: null };
  } catch (err) {
    return { metadata: null, broken: `${METADATA_FILE} is corrupt: ${err instanceof Error ? err.message : String(err)}` };
  }
}
