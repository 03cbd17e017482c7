// The installed-backends directory as the node uses it: listing (kept current by an index), staging, validation,
// and the swap, removal, leftovers and crash recovery, each done by a part of its own (backend-dirs.ts for where each
// tree lives, swap.ts, leftovers.ts, recovery.ts).
import { lstat, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { HangarError } from '../../../shared/errors.ts';
import type { RunShState } from '../gallery/localai-listing.ts';
import { BackendDirs, errno, isDir, LOCALAI_DIR_MODE, names, WORK_DIR } from './backend-dirs.ts';
import { DirectoryIndex, type Directories, type DirectoryReader } from './directory-index.ts';
import { readDirectory, runShState, stampOf, type InstalledBackend, type ReadContext } from './directory-read.ts';
import { KeptTrees, type KeptTree } from './kept.ts';
import { kindOf, removeLeftover, restoreLeftover } from './leftovers.ts';
import { ListingFile } from './listing-file.ts';
import { METADATA_FILE, writeMetadataFile, type BackendMetadata } from './metadata.ts';
import { recover, type Recovered } from './recovery.ts';
import { RUN_SH, makeRunnable } from './run-file.ts';
import { Swaps, type PendingSwap, type SwapHooks } from './swap.ts';
import { SwapJournal } from './swap-journal.ts';

export type { BackendMetadata } from './metadata.ts';
export type { DirectoryKind, InstalledBackend } from './directory-read.ts';
export type { KeptTree } from './kept.ts';
export type { InterruptedSwap, SwapNote } from './swap-journal.ts';
export { backendError, LOCALAI_DIR_MODE, WORK_DIR } from './backend-dirs.ts';
export { isBackup, leftoverOf, type Leftover } from './leftovers.ts';
export { interruption, type Recovered } from './recovery.ts';
export type { PendingSwap, SwapHooks, SwapStep } from './swap.ts';

/** What the kept listing was made by: bump it when what a read makes of a directory changes. */
const LISTING_FORMAT = 1;

export class BackendStore {
  private readonly dirs: BackendDirs;
  private readonly journal: SwapJournal;
  private readonly swaps: Swaps;
  /** What a listing last read of each directory, while the store watches (see watch()). */
  private readonly index: DirectoryIndex<InstalledBackend>;
  private readonly keptTrees: KeptTrees;
  private keptCache: { generation: number; until: number; trees: KeptTree[] } | null = null;
  private readonly touched = (name: string) => this.index.touch(name, true);

  /** `listingFile`: where the listing is kept between runs, so a start reads only what changed meanwhile. */
  constructor(
    readonly dir: string,
    listingFile?: string,
  ) {
    this.dirs = new BackendDirs(dir);
    this.journal = new SwapJournal(join(this.dirs.work, 'journal'));
    this.swaps = new Swaps(this.dirs, this.journal, this.touched);
    this.keptTrees = new KeptTrees(join(this.dirs.work, 'previous'), join(this.dirs.work, 'kept.json'), (name) => isDir(this.liveDir(name)));
    // Whether run.sh is runnable depends on who asks: another user's listing is not believed.
    const by = `${LISTING_FORMAT}.${process.getuid?.() ?? ''}`;
    this.index = new DirectoryIndex({
      dir,
      workDir: WORK_DIR,
      names: () => this.directoryNames(),
      reader: () => this.reader(),
      kept: listingFile === undefined ? null : new ListingFile(listingFile, { dir, by }),
    });
  }

  /**
   * Keeps an index of the directory, updated by the store's own changes and by fs.watch events, so a listing reads
   * only what changed since the last one. Without it every listing reads every directory. `heard`: each name an
   * fs.watch event said changed (LocalAI or a person at work in the directory, or Hangar itself).
   */
  watch(heard?: (name: string) => void): void {
    this.index.start(heard);
  }

  /** Stops watching; resolves once the listing kept for the next start is written. */
  unwatch(): Promise<void> {
    return this.index.close();
  }

  liveDir(name: string): string {
    return this.dirs.liveDir(name);
  }

  /** Where the rollback tree of `name` lives. */
  previousDir(name: string): string {
    return this.dirs.previousDir(name);
  }

  /** The backends of names Hangar manages. */
  async list(): Promise<InstalledBackend[]> {
    return (await this.listAll()).filter((b) => b.kind === 'backend');
  }

  /** Every directory LocalAI would look at (all but Hangar's own `.hangar`), whatever its name. */
  async listAll(): Promise<InstalledBackend[]> {
    return this.index.list();
  }

  /** The same directories by name, as a version that stays as it is, which says what changed since an earlier one. */
  async directories(): Promise<Directories<InstalledBackend>> {
    return this.index.directories();
  }

  private async directoryNames(): Promise<string[]> {
    const entries = await readdir(this.dir, { withFileTypes: true }).catch((err: unknown) => {
      if (errno(err) === 'ENOENT') return [];
      throw err;
    });
    return entries.filter((e) => e.isDirectory() && e.name !== WORK_DIR).map((e) => e.name);
  }

  /** run.sh of a directory of the backends directory as LocalAI stats it (following links). */
  runShOf(entry: string): RunShState {
    return runShState(statSync(join(this.dir, entry, RUN_SH), { throwIfNoEntry: false }));
  }

  /**
   * Rollback trees whose backend is gone (deleted by LocalAI, which knows nothing of `.hangar`), with their size;
   * those kept longer than KEPT_DAYS are removed here.
   */
  async kept(now = Date.now()): Promise<KeptTree[]> {
    if (!this.index.active) return this.keptTrees.list(now, (name, dir) => this.dirs.trash(name, dir, false));
    await this.index.settle();
    const cached = this.keptCache;
    if (cached && cached.generation === this.index.generation && now < cached.until) return cached.trees;
    const generation = this.index.generation;
    const listed = await this.keptTrees.list(now, (name, dir) => this.dirs.trash(name, dir, false));
    // The same trees keep the same array, so what was made from them is not made again.
    const trees = cached && JSON.stringify(cached.trees) === JSON.stringify(listed) ? cached.trees : listed;
    const until = Math.min(Infinity, ...trees.map((t) => Date.parse(t.expiresAt)));
    this.keptCache = { generation, until, trees };
    return trees;
  }

  async get(name: string): Promise<InstalledBackend | null> {
    this.liveDir(name);
    return this.index.get(name);
  }

  /** A fresh, empty staging directory of its own: several fetches of one backend may run at once. */
  async stage(name: string): Promise<string> {
    this.liveDir(name);
    const staging = this.dirs.scratch('staging', name);
    await mkdir(join(this.dirs.work, 'staging'), { recursive: true });
    await mkdir(staging, LOCALAI_DIR_MODE);
    return staging;
  }

  async discard(staged: string): Promise<void> {
    await rm(staged, { recursive: true, force: true });
  }

  /**
   * Throws a HangarError naming the backend if the staged tree is not a valid backend. A run.sh with no execute bit
   * is made executable now, as LocalAI would make it before its first start.
   */
  async validate(name: string, stagedDir: string): Promise<void> {
    const runSh = join(stagedDir, RUN_SH);
    const stats = await stat(runSh).catch((err: unknown) => {
      if (errno(err) === 'ENOENT') return null;
      throw err;
    });
    if (stats === null) throw new HangarError('bad-input', `backend "${name}": the tree has no ${RUN_SH}`);
    if (!stats.isFile()) throw new HangarError('bad-input', `backend "${name}": ${RUN_SH} is not a regular file`);
    if ((await lstat(join(stagedDir, METADATA_FILE)).catch(() => null))?.isDirectory()) {
      throw new HangarError('bad-input', `backend "${name}": ${METADATA_FILE} is a directory, where LocalAI records the install`);
    }
    await makeRunnable(runSh);
  }

  async writeMetadata(dir: string, meta: BackendMetadata): Promise<void> {
    await writeMetadataFile(dir, meta);
  }

  /**
   * Swaps the staged tree in: the live tree is renamed aside, the staged one renamed live. Settling keeps the
   * replaced tree as the rollback target, unless it is the same version as the new one (a reinstall). Undoing
   * discards the new tree.
   */
  commit(name: string, staged: string, hooks: SwapHooks = {}): Promise<PendingSwap> {
    return this.swaps.commit(name, staged, hooks);
  }

  /** One swap back: live <-> rollback tree. */
  rollback(name: string, hooks: SwapHooks = {}): Promise<PendingSwap> {
    return this.swaps.rollback(name, hooks);
  }

  /** Removes the backend, live and rollback tree (meta siblings pointing at it are the caller's concern). */
  async remove(name: string, hooks: SwapHooks = {}): Promise<void> {
    const live = this.liveDir(name);
    const previous = this.previousDir(name);
    const [hasLive, hasPrevious] = await Promise.all([isDir(live), isDir(previous)]);
    if (!hasLive && !hasPrevious) throw new HangarError('not-found', `backend "${name}" is not installed`);
    if (hasPrevious) await this.dirs.trash(name, previous, false);
    if (hasLive) {
      await hooks.beforeSwap?.(live, () => undefined);
      await this.dirs.trash(name, live, true);
    }
    this.index.touch(name, true);
  }

  /** Writes a meta backend dir holding only metadata.json. */
  async writeMeta(name: string, meta: BackendMetadata): Promise<void> {
    const live = this.liveDir(name);
    if (await stat(join(live, RUN_SH)).then(() => true, () => false)) {
      throw new HangarError('conflict', `backend "${name}" is a concrete backend; it cannot become a meta backend`);
    }
    await mkdir(live, { recursive: true, mode: LOCALAI_DIR_MODE });
    await writeMetadataFile(live, meta);
    this.index.touch(name, true);
  }

  /** Removes LocalAI's working directory `entry` (`X.install-tmp` and the like). */
  removeLeftover(entry: string): Promise<void> {
    return removeLeftover(this.dirs, entry, this.touched);
  }

  /** Puts a backup LocalAI left behind (`X.install-backup`, `X.backup`) back as X, when X is gone. Returns X. */
  restoreLeftover(entry: string): Promise<string> {
    return restoreLeftover(this.dirs, entry, this.touched);
  }

  /**
   * On start: finishes or rolls back any interrupted swap of Hangar's, empties staging and trash, and moves Hangar
   * 0.1's `<name>.previous` trees under .hangar. Returns what it did.
   */
  async recover(): Promise<Recovered> {
    this.index.invalidateAll();
    return recover(this.dirs, this.journal, this.swaps);
  }

  /** Reads for one pass of the index over many names: the rollback trees' names are read once for all of them. */
  private async reader(): Promise<DirectoryReader<InstalledBackend>> {
    const previousRoot = join(this.dirs.work, 'previous');
    const previousNames = new Set(await names(previousRoot).catch(() => []));
    const context: ReadContext = { backendsDir: this.dir, previousRoot, previousNames, kindOf, startedAt: Date.now() };
    return { stamp: (name) => stampOf(context, name), read: (name) => readDirectory(context, name) };
  }
}

