// The swap journal: while a backend is swapped, `.hangar/journal/<name>.json` says how far the swap got, written whole
// (state-file.ts) before each step a crash must be able to undo. The health gate is a step: a new tree whose
// processes have not come back healthy is not a swap that happened, so a host that dies before the gate passes has
// the old tree put back on its next start, however far the renames got. It also keeps what the swap was for (the
// job, the versions, the models it stopped), so that start can say how the job ended and run those models again.
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { JobKind } from '../../../shared/types.ts';
import { readJsonFile, removeInterruptedWrites, writeJsonFile } from '../state-file.ts';

/** swapping: the old tree may be aside; gate: the new tree is live, its health not known; settling: the gate passed. */
export type SwapPhase = 'swapping' | 'gate' | 'settling';

/** What a swap is for, as its caller tells it. */
export interface SwapNote {
  job: { id: string; kind: JobKind; startedAt: string } | null;
  verb: string;
  from: string | null;
  to: string | null;
  /** The models whose processes the swap stopped: they run again afterwards, from whichever tree is live. */
  stopped: Array<{ model: string; backend: string }>;
}

export interface JournalEntry {
  name: string;
  /** commit: a staged tree comes in (its undo discards it); rollback: the rollback tree comes in (its undo keeps it). */
  swap: 'commit' | 'rollback';
  phase: SwapPhase;
  /** Whether a live tree was renamed aside (false for a first install). */
  replacing: boolean;
  note: SwapNote | null;
}

/** A swap a host did not live to finish, and what its next start made of it. */
export interface InterruptedSwap {
  name: string;
  phase: SwapPhase;
  /** 'rolled back': the tree live before the swap is live again; 'finished': the gate had passed, the new tree stays. */
  outcome: 'rolled back' | 'finished';
  /** Whether a tree was live before the swap (a first install has none: rolled back, the backend is not installed). */
  replacing: boolean;
  note: SwapNote | null;
}

export class SwapJournal {
  constructor(private readonly dir: string) {}

  write(entry: JournalEntry): Promise<void> {
    return writeJsonFile(this.path(entry.name), { version: 1, ...entry });
  }

  async read(name: string): Promise<JournalEntry | null> {
    const entry = (await readJsonFile(this.path(name))) as Partial<JournalEntry> | null;
    const valid = entry?.name === name && (entry.swap === 'commit' || entry.swap === 'rollback') && ['swapping', 'gate', 'settling'].includes(entry.phase ?? '');
    return valid ? { name, swap: entry.swap!, phase: entry.phase!, replacing: entry.replacing === true, note: entry.note ?? null } : null;
  }

  remove(name: string): Promise<void> {
    return rm(this.path(name), { force: true });
  }

  /** The backends with a journal (a swap in flight, or one a crash interrupted); half-written files are removed. */
  async names(): Promise<string[]> {
    await removeInterruptedWrites(this.dir);
    const files = await readdir(this.dir).catch(() => [] as string[]);
    return files.filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -'.json'.length));
  }

  private path(name: string): string {
    return join(this.dir, `${name}.json`);
  }
}
