// The installed-backends directory: listing, staging, validation, the atomic swap, rollback, removal and
// crash recovery. Live backends are `<backends>/<name>`, exactly where LocalAI looks for them. Everything else
// Hangar keeps lives under `<backends>/.hangar/` (staging, the tree being replaced, the rollback tree, trash):
// LocalAI treats every subdirectory with a run.sh as a backend, and `.hangar` has none, so it never sees a
// rollback tree as a runnable backend, while every move stays a rename on the same filesystem.
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { HangarError } from '../../../shared/errors.ts';
import { WORKING_SUFFIXES, backendName } from '../../../shared/schemas.ts';
import type { RunShState } from '../gallery/localai-listing.ts';
import { removeInterruptedWrites } from '../state-file.ts';
import { DirectoryIndex, type Directories, type DirectoryReader } from './directory-index.ts';
import { readDirectory, readMetadata, runShState, stampOf, type DirectoryKind, type InstalledBackend, type ReadContext } from './directory-read.ts';
import { KeptTrees, type KeptTree } from './kept.ts';
import { ListingFile } from './listing-file.ts';
import { writeMetadataFile, type BackendMetadata } from './metadata.ts';
import { RUN_SH, makeRunnable } from './run-file.ts';
import { SwapJournal, type InterruptedSwap, type JournalEntry, type SwapNote } from './swap-journal.ts';

export type { BackendMetadata } from './metadata.ts';
export type { DirectoryKind, InstalledBackend } from './directory-read.ts';
export type { KeptTree } from './kept.ts';
export type { InterruptedSwap, SwapNote } from './swap-journal.ts';

/** A working directory: which backend it belongs to, and by which suffix. */
export interface Leftover {
  of: string;
  suffix: (typeof WORKING_SUFFIXES)[number];
}

export type SwapStep = 'staged' | 'backup-renamed' | 'live-renamed' | 'cleanup-done';

export interface SwapHooks {
  /**
   * Called with the live dir path right before it is renamed (the node stops its processes here). It calls
   * `noteKnown` once what the note says about the stop is known, before the processes are gone.
   */
  beforeSwap?(liveDir: string, noteKnown: () => void): Promise<void>;
  /** Observes each step as it completes (progress; tests use it to crash the process at each step). */
  onStep?(step: SwapStep): void | Promise<void>;
  /** What the swap is for, kept in its journal (read at each phase, so what beforeSwap learns is in it). */
  note?(): SwapNote;
}

/**
 * A swap whose new tree is live while the replaced one is held aside. The caller checks the new tree (its
 * processes come back healthy), then settles; or undoes, which puts the replaced tree back live and leaves the
 * rollback target exactly as it was. Until it settles, a host that dies has the swap undone on its next start.
 */
export interface PendingSwap {
  /** Resolves once the journal says the health gate began; rejects when that cannot be written (undo, then). */
  gated: Promise<void>;
  settle(): Promise<void>;
  undo(): Promise<void>;
}

/** LocalAI's names for a live tree renamed aside mid-swap (install, upgrade): the only leftovers worth restoring. */
const LOCALAI_BACKUP_SUFFIXES: readonly string[] = ['.install-backup', '.backup'];
/** Where Hangar 0.1 kept the rollback tree; moved under .hangar on start. */
const LEGACY_PREVIOUS_SUFFIX = '.previous';
/** LocalAI creates every directory it makes in the backends directory with this mode. */
export const LOCALAI_DIR_MODE = 0o750;

export const WORK_DIR = '.hangar';
/** What the kept listing was made by: bump it when what a read makes of a directory changes. */
const LISTING_FORMAT = 1;
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

function kindOf(entry: string): DirectoryKind {
  if (backendName.safeParse(entry).success) return 'backend';
  return leftoverOf(entry) ? 'leftover' : 'foreign';
}

/** How each kind of swap takes its incoming tree back out of the live place. */
type SwapKind = JournalEntry['swap'];

/** What recover() did: one line per thing, and the swaps a crash interrupted (to be told and followed up). */
export interface Recovered {
  done: string[];
  interrupted: InterruptedSwap[];
}

export class BackendStore {
  private readonly work: string;
  private readonly journal: SwapJournal;
  /** What a listing last read of each directory, while the store watches (see watch()). */
  private readonly index: DirectoryIndex<InstalledBackend>;
  private readonly keptTrees: KeptTrees;
  private keptCache: { generation: number; until: number; trees: KeptTree[] } | null = null;

  /** `listingFile`: where the listing is kept between runs, so a start reads only what changed meanwhile. */
  constructor(
    readonly dir: string,
    listingFile?: string,
  ) {
    this.work = join(dir, WORK_DIR);
    this.journal = new SwapJournal(join(this.work, 'journal'));
    this.keptTrees = new KeptTrees(join(this.work, 'previous'), join(this.work, 'kept.json'), (name) => isDir(this.liveDir(name)));
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
    if (!this.index.active) return this.keptTrees.list(now, (name, dir) => this.trash(name, dir, false));
    await this.index.settle();
    const cached = this.keptCache;
    if (cached && cached.generation === this.index.generation && now < cached.until) return cached.trees;
    const generation = this.index.generation;
    const listed = await this.keptTrees.list(now, (name, dir) => this.trash(name, dir, false));
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
    const staging = this.scratch('staging', name);
    await mkdir(join(this.work, 'staging'), { recursive: true });
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
    await makeRunnable(runSh);
  }

  async writeMetadata(dir: string, meta: BackendMetadata): Promise<void> {
    await writeMetadataFile(dir, meta);
  }

  /**
   * Swaps the staged tree in: the live tree is renamed aside, the staged one renamed live. Settling keeps the
   * replaced tree as the rollback target, unless it is the same version as the new one (a reinstall), which
   * never evicts the older version the rollback target holds. Undoing discards the new tree.
   */
  async commit(name: string, staged: string, hooks: SwapHooks = {}): Promise<PendingSwap> {
    if (!(await isDir(staged))) throw new HangarError('not-found', `backend "${name}": nothing is staged`);
    await hooks.onStep?.('staged');
    return this.swapIn(name, 'commit', staged, hooks, () => this.settleReplaced(name));
  }

  /** One swap back: live <-> rollback tree. */
  async rollback(name: string, hooks: SwapHooks = {}): Promise<PendingSwap> {
    const previous = this.previousDir(name);
    if (!(await isDir(previous))) throw new HangarError('not-found', `backend "${name}" has no previous version to roll back to`);
    return this.swapIn(name, 'rollback', previous, hooks, () => rename(this.backupDir(name), previous));
  }

  /**
   * rename(live, backup), then rename(incoming, live); if the second rename fails the backup goes back. Each rename
   * is in the journal before it begins. The returned swap settles what becomes of the backup (`settleBackup`), or
   * undoes the whole swap.
   */
  private async swapIn(name: string, kind: SwapKind, incoming: string, hooks: SwapHooks, settleBackup: () => Promise<void>): Promise<PendingSwap> {
    const live = this.liveDir(name);
    const backup = this.backupDir(name);
    const replacing = await isDir(live);
    const journal = (phase: JournalEntry['phase']) => this.journal.write({ name, swap: kind, phase, replacing, note: hooks.note?.() ?? null });
    await this.journal.reserve();
    if (replacing) {
      await mkdir(join(this.work, 'backup'), { recursive: true });
      // A backup an earlier swap could not settle is the tree it replaced: the rollback target, not rubbish.
      if (await isDir(backup)) await this.settleReplaced(name);
      await this.stopFirst(name, live, hooks, () => journal('swapping'));
    } else await journal('swapping');
    if (replacing) {
      await this.renameLive(name, live, backup);
      await hooks.onStep?.('backup-renamed');
    }
    try {
      await rename(incoming, live);
    } catch (err) {
      if (replacing) await rename(backup, live);
      await this.journal.remove(name);
      throw backendError(name, err);
    }
    this.index.touch(name, true);
    // The health gate begins (the caller respawns) while its entry is written: until it is on disk the journal says
    // 'swapping', which a next start undoes just as it undoes 'gate'.
    const gate = journal('gate').then(() => hooks.onStep?.('live-renamed'));
    gate.catch(() => undefined);
    return {
      gated: gate,
      settle: async () => {
        await gate;
        // Past the gate the new tree stays: a journal that cannot say so (a full disk) leaves it at 'gate', which a
        // crash before the next step would undo; the settling goes on regardless.
        await journal('settling').catch(() => undefined);
        if (replacing) await settleBackup();
        await this.journal.remove(name);
        this.index.touch(name, true);
        await hooks.onStep?.('cleanup-done');
      },
      undo: async () => {
        await gate.catch(() => undefined);
        await this.undoSwap(name, kind, replacing);
        await this.journal.remove(name);
      },
    };
  }

  /**
   * The hook's stop, with the journal's first entry written once its note is known: while the stopped processes
   * exit, not after, so its flush (which may carry the staged tree's data to disk) adds nothing to their downtime. A
   * journal for a swap that did not begin names what was stopped, for the next start to run it again.
   */
  private async stopFirst(name: string, live: string, hooks: SwapHooks, writeJournal: () => Promise<void>): Promise<void> {
    let written: Promise<void> | undefined;
    const noteKnown = () => {
      if (written) return;
      written = writeJournal();
      // Awaited below; a failure meanwhile is not an unhandled one.
      written.catch(() => undefined);
    };
    try {
      await hooks.beforeSwap?.(live, noteKnown);
    } catch (err) {
      await written?.catch(() => undefined);
      await this.journal.remove(name);
      throw err;
    }
    await (written ?? writeJournal());
  }

  /** The incoming tree leaves the live place (a staged one is discarded, the rollback tree kept); the backup comes back. */
  private async undoSwap(name: string, kind: SwapKind, replacing: boolean): Promise<void> {
    const live = this.liveDir(name);
    if (await isDir(live)) {
      if (kind === 'commit') await this.trash(name, live, true);
      else await this.renameLive(name, live, this.previousDir(name));
    }
    if (replacing) await rename(this.backupDir(name), live);
    this.index.touch(name, true);
  }

  /** Removes the backend, live and rollback tree (meta siblings pointing at it are the caller's concern). */
  async remove(name: string, hooks: SwapHooks = {}): Promise<void> {
    const live = this.liveDir(name);
    const previous = this.previousDir(name);
    const [hasLive, hasPrevious] = await Promise.all([isDir(live), isDir(previous)]);
    if (!hasLive && !hasPrevious) throw new HangarError('not-found', `backend "${name}" is not installed`);
    if (hasPrevious) await this.trash(name, previous, false);
    if (hasLive) {
      await hooks.beforeSwap?.(live, () => undefined);
      await this.trash(name, live, true);
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
  async removeLeftover(entry: string): Promise<void> {
    const leftover = await this.existingLeftover(entry);
    await this.trash(leftover.of, join(this.dir, entry), false);
    this.index.touch(entry, true);
  }

  /** Puts a backup LocalAI left behind (`X.install-backup`, `X.backup`) back as X, when X is gone. Returns X. */
  async restoreLeftover(entry: string): Promise<string> {
    const leftover = await this.existingLeftover(entry);
    if (!isBackup(leftover)) throw new HangarError('bad-input', `${entry} is a partial download, not a backup: it cannot be restored`);
    if (await isDir(this.liveDir(leftover.of))) throw new HangarError('conflict', `backend "${leftover.of}" is installed: ${entry} cannot replace it`);
    await rename(join(this.dir, entry), this.liveDir(leftover.of));
    this.index.touch(entry, true);
    this.index.touch(leftover.of, true);
    return leftover.of;
  }

  private async existingLeftover(entry: string): Promise<Leftover> {
    const leftover = leftoverOf(entry);
    if (!leftover) throw new HangarError('bad-input', `"${entry.slice(0, 80)}" is not a working directory of a backend`);
    if (!(await isDir(join(this.dir, entry)))) throw new HangarError('not-found', `${entry} is not in the backends directory`);
    return leftover;
  }

  /**
   * On start: finishes or rolls back any interrupted swap of Hangar's, empties staging and trash, and moves Hangar
   * 0.1's `<name>.previous` trees under .hangar. LocalAI's own working directories are left as LocalAI leaves them
   * at its own start (it does nothing with them): they are listed, to be restored or removed. Returns what it did.
   */
  async recover(): Promise<Recovered> {
    this.index.invalidateAll();
    const done: string[] = [...(await removeInterruptedWrites(this.work))];
    for (const kind of ['staging', 'trash']) {
      const left = await names(join(this.work, kind));
      if (left.length === 0) continue;
      await rm(join(this.work, kind), { recursive: true, force: true });
      if (kind === 'staging') done.push(...left.map((n) => `${n.slice(0, n.lastIndexOf('.'))}: removed stale staging`));
    }
    const interrupted: InterruptedSwap[] = [];
    for (const name of new Set([...(await names(join(this.work, 'backup'))), ...(await this.journal.names())])) {
      if (!backendName.safeParse(name).success) continue;
      const { said, swap } = await this.recoverSwap(name, await this.journal.read(name));
      if (said) done.push(`${name}: ${said}`);
      if (swap) interrupted.push(swap);
    }
    for (const entry of await names(this.dir)) {
      done.push(...(await this.recoverSibling(entry)));
    }
    return { done, interrupted };
  }

  /**
   * One swap a host did not live to finish. Until its gate passed (the journal says 'settling'), it is undone: the
   * tree live before it is live again. After, or with no journal (an older Hangar's swap), it is finished.
   */
  private async recoverSwap(name: string, entry: JournalEntry | null): Promise<{ said: string | null; swap: InterruptedSwap | null }> {
    const [hasBackup, hasLive] = await Promise.all([isDir(this.backupDir(name)), isDir(this.liveDir(name))]);
    const gatePassed = entry === null || entry.phase === 'settling';
    const renamed = hasLive && (hasBackup || entry?.replacing === false);
    let said: string | null = null;
    if (hasBackup && !hasLive) {
      await rename(this.backupDir(name), this.liveDir(name));
      said = 'put the live tree back after an interrupted swap';
    } else if (hasBackup && gatePassed) {
      await this.settleReplaced(name);
      said = 'finished an interrupted swap';
    } else if (entry && !gatePassed && renamed) {
      await this.undoSwap(name, entry.swap, hasBackup);
    }
    await this.journal.remove(name);
    if (!entry) return { said, swap: null };
    // The gate's entry is written as the gate begins: renames found done mean the gate had begun all the same.
    const phase = entry.phase === 'swapping' && renamed ? 'gate' : entry.phase;
    if (!gatePassed && renamed) said = `swapped back: ${interruption(phase)}`;
    const outcome = gatePassed ? 'finished' : 'rolled back';
    return { said, swap: { name, phase, outcome, replacing: entry.replacing, note: entry.note } };
  }

  private async recoverSibling(entry: string): Promise<string[]> {
    const leftover = leftoverOf(entry);
    if (leftover?.suffix !== LEGACY_PREVIOUS_SUFFIX) return [];
    const name = leftover.of;
    const path = join(this.dir, entry);
    if (await isDir(this.previousDir(name))) {
      await this.trash(name, path, false);
      return [`${name}: removed an older rollback tree`];
    }
    await mkdir(join(this.work, 'previous'), { recursive: true });
    await rename(path, this.previousDir(name));
    return [`${name}: moved its rollback tree out of the backends listing`];
  }

  /** The replaced tree becomes the rollback target, unless it is the version now live: then it goes. */
  private async settleReplaced(name: string): Promise<void> {
    const backup = this.backupDir(name);
    const [replaced, current] = await Promise.all([readMetadata(backup, name), readMetadata(this.liveDir(name), name)]);
    if (sameVersion(replaced.metadata, current.metadata)) return this.trash(name, backup, false);
    const previous = this.previousDir(name);
    if (await isDir(previous)) await this.trash(name, previous, false);
    await mkdir(join(this.work, 'previous'), { recursive: true });
    await rename(backup, previous);
  }

  /** Renames `dir` into the trash, then deletes it: a crash midway leaves only trash, emptied on the next start. */
  private async trash(name: string, dir: string, live: boolean): Promise<void> {
    const target = this.scratch('trash', name);
    await mkdir(join(this.work, 'trash'), { recursive: true });
    if (live) await this.renameLive(name, dir, target);
    else await rename(dir, target);
    await rm(target, { recursive: true, force: true });
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

  private backupDir(name: string): string {
    return join(this.work, 'backup', name);
  }

  private scratch(kind: 'staging' | 'trash', name: string): string {
    return join(this.work, kind, `${name}.${randomBytes(6).toString('hex')}`);
  }

  /** Reads for one pass of the index over many names: the rollback trees' names are read once for all of them. */
  private async reader(): Promise<DirectoryReader<InstalledBackend>> {
    const previousRoot = join(this.work, 'previous');
    const previousNames = new Set(await names(previousRoot).catch(() => []));
    const context: ReadContext = { backendsDir: this.dir, previousRoot, previousNames, kindOf, startedAt: Date.now() };
    return { stamp: (name) => stampOf(context, name), read: (name) => readDirectory(context, name) };
  }
}

/** Same version: equal versions, or no versions and an equal digest or sha256. Unknown is never the same. */
function sameVersion(a: BackendMetadata | null, b: BackendMetadata | null): boolean {
  if (!a || !b) return false;
  if (a.version !== null || b.version !== null) return a.version === b.version;
  return (a.digest !== null && a.digest === b.digest) || (a.sha256 !== null && a.sha256 === b.sha256);
}

async function names(dir: string): Promise<string[]> {
  return readdir(dir).catch((err: unknown) => {
    if (errno(err) === 'ENOENT') return [];
    throw err;
  });
}

/** Why an interrupted swap was undone, as its job says it. */
export function interruption(phase: JournalEntry['phase']): string {
  return phase === 'gate' ? 'the host stopped during the health gate' : 'the host stopped during the swap';
}
