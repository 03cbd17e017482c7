// The atomic swap of a backend's tree and its rollback: rename(live, backup), then rename(incoming, live), each
// rename in the journal before it begins; the new tree is checked while the replaced one is held aside, then the
// swap settles (the replaced tree becomes the rollback target) or is undone.
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { HangarError } from '../../../shared/errors.ts';
import { backendError, isDir, type BackendDirs } from './backend-dirs.ts';
import { readMetadata } from './directory-read.ts';
import type { BackendMetadata } from './metadata.ts';
import type { JournalEntry, SwapJournal, SwapNote } from './swap-journal.ts';

export type SwapStep = 'staged' | 'backup-renamed' | 'live-renamed' | 'cleanup-done';

export interface SwapHooks {
  /**
   * Called with the live dir path right before it is renamed (the node stops its processes here). It calls
   * `noteKnown` once what the note says about the stop is known, before the processes are gone.
   */
  beforeSwap?(liveDir: string, noteKnown: () => void): Promise<void>;
  /**
   * Observes each step as it completes (tests use it to crash the process at each step). 'backup-renamed' comes
   * between the two renames of a swap and is not awaited: nothing may wait there.
   */
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
  /** Writes the journal again, with what the hooks' note says now (more models to bring back), until it settles. */
  renote(): Promise<void>;
  settle(): Promise<void>;
  undo(): Promise<void>;
}

/** How each kind of swap takes its incoming tree back out of the live place. */
export type SwapKind = JournalEntry['swap'];

export class Swaps {
  /** `touched`: a backend's directories changed (the listing reads it again). */
  constructor(
    private readonly dirs: BackendDirs,
    private readonly journal: SwapJournal,
    private readonly touched: (name: string) => void,
  ) {}

  /**
   * Swaps the staged tree in. Settling keeps the replaced tree as the rollback target, unless it is the same version
   * as the new one (a reinstall), which never evicts the older version the rollback target holds. Undoing discards
   * the new tree.
   */
  async commit(name: string, staged: string, hooks: SwapHooks): Promise<PendingSwap> {
    if (!(await isDir(staged))) throw new HangarError('not-found', `backend "${name}": nothing is staged`);
    await hooks.onStep?.('staged');
    return this.swapIn(name, 'commit', staged, hooks, () => this.settleReplaced(name));
  }

  /** One swap back: live <-> rollback tree. */
  async rollback(name: string, hooks: SwapHooks): Promise<PendingSwap> {
    const previous = this.dirs.previousDir(name);
    if (!(await isDir(previous))) throw new HangarError('not-found', `backend "${name}" has no previous version to roll back to`);
    return this.swapIn(name, 'rollback', previous, hooks, () => rename(this.dirs.backupDir(name), previous));
  }

  /** The incoming tree leaves the live place (a staged one is discarded, the rollback tree kept); the backup comes back. */
  async undo(name: string, kind: SwapKind, replacing: boolean): Promise<void> {
    const live = this.dirs.liveDir(name);
    const backup = replacing ? this.dirs.backupDir(name) : undefined;
    if (!(await isDir(live))) {
      if (backup) await rename(backup, live);
    } else if (kind === 'rollback') {
      await this.dirs.renameLive(name, live, this.dirs.previousDir(name), backup);
    } else {
      // Out of the live place before it is deleted: the backup is back live at once, not once the tree is gone.
      const discarded = this.dirs.scratch('trash', name);
      await mkdir(join(this.dirs.work, 'trash'), { recursive: true });
      await this.dirs.renameLive(name, live, discarded, backup);
      await rm(discarded, { recursive: true, force: true });
    }
    this.touched(name);
  }

  /** The replaced tree becomes the rollback target, unless it is the version now live: then it goes. */
  async settleReplaced(name: string): Promise<void> {
    const backup = this.dirs.backupDir(name);
    const [replaced, current] = await Promise.all([readMetadata(backup, name), readMetadata(this.dirs.liveDir(name), name)]);
    if (sameVersion(replaced.metadata, current.metadata)) return this.dirs.trash(name, backup, false);
    const previous = this.dirs.previousDir(name);
    if (await isDir(previous)) await this.dirs.trash(name, previous, false);
    await mkdir(join(this.dirs.work, 'previous'), { recursive: true });
    await rename(backup, previous);
  }

  /** The returned swap settles what becomes of the backup (`settleBackup`), or undoes the whole swap. */
  private async swapIn(name: string, kind: SwapKind, incoming: string, hooks: SwapHooks, settleBackup: () => Promise<void>): Promise<PendingSwap> {
    const live = this.dirs.liveDir(name);
    const backup = this.dirs.backupDir(name);
    const replacing = await isDir(live);
    // One write at a time, so the last entry written is the one on disk; `renote` writes the current phase again.
    let phase: JournalEntry['phase'] = 'swapping';
    let writing: Promise<void> = Promise.resolve();
    const journal = (next: JournalEntry['phase']) => {
      phase = next;
      writing = writing.catch(() => undefined).then(() => this.journal.write({ name, swap: kind, phase: next, replacing, note: hooks.note?.() ?? null }));
      return writing;
    };
    let ended = false;
    await this.journal.reserve();
    if (replacing) {
      await mkdir(join(this.dirs.work, 'backup'), { recursive: true });
      // A backup an earlier swap could not settle is the tree it replaced: the rollback target, not rubbish.
      if (await isDir(backup)) await this.settleReplaced(name);
      await this.stopFirst(name, live, hooks, () => journal('swapping'));
    } else await journal('swapping');
    try {
      if (replacing) await this.dirs.renameLive(name, live, backup, incoming, () => hooks.onStep?.('backup-renamed'));
      else await rename(incoming, live);
    } catch (err) {
      await this.journal.remove(name);
      throw backendError(name, err);
    }
    this.touched(name);
    // The health gate begins (the caller respawns) while its entry is written: until it is on disk the journal says
    // 'swapping', which a next start undoes just as it undoes 'gate'.
    const gate = journal('gate').then(() => hooks.onStep?.('live-renamed'));
    gate.catch(() => undefined);
    return {
      gated: gate,
      renote: async () => {
        if (!ended) await journal(phase);
      },
      settle: async () => {
        await gate;
        // Past the gate the new tree stays: a journal that cannot say so (a full disk) leaves it at 'gate', which a
        // crash before the next step would undo; the settling goes on regardless.
        await journal('settling').catch(() => undefined);
        if (replacing) await settleBackup();
        ended = true;
        await writing.catch(() => undefined);
        await this.journal.remove(name);
        this.touched(name);
        await hooks.onStep?.('cleanup-done');
      },
      undo: async () => {
        await gate.catch(() => undefined);
        await this.undo(name, kind, replacing);
        ended = true;
        await writing.catch(() => undefined);
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
}

/** Same version: equal versions, or no versions and an equal digest or sha256. Unknown is never the same. */
function sameVersion(a: BackendMetadata | null, b: BackendMetadata | null): boolean {
  if (!a || !b) return false;
  if (a.version !== null || b.version !== null) return a.version === b.version;
  return (a.digest !== null && a.digest === b.digest) || (a.sha256 !== null && a.sha256 === b.sha256);
}
