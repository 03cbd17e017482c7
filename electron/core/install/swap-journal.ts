// The swap journal: while a backend is swapped, `.hangar/journal/<name>.json` says how far the swap got, written whole
// (state-file.ts) before each step a crash must be able to undo. The health gate is a step: a new tree whose
// processes have not come back healthy is not a swap that happened, so a host that dies before the gate passes has
// the old tree put back on its next start, however far the renames got. It also keeps what the swap was for (the
// job, the versions, the models it stopped), so that start can say how the job ended and run those models again.
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
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
  /** The co-runner's models (LocalAI's) the swap reloads: those a crash left unloaded are loaded at the next start. */
  coModels?: string[];
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

/**
 * Room kept for the journal: a full disk must not stop a swap between its renames. A write that finds no space frees
 * it and tries once more; it is made again once the swap is over.
 */
const RESERVE_BYTES = 256 * 1024;

export class SwapJournal {
  constructor(private readonly dir: string) {}

  /** Keeps the journal's room taken (where there is room for it). */
  async reserve(): Promise<void> {
    await mkdir(this.dir, { recursive: true }).catch(() => undefined);
    await writeFile(this.reservePath(), Buffer.alloc(RESERVE_BYTES), { flag: 'wx' }).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') await rm(this.reservePath(), { force: true });
    });
  }

  async write(entry: JournalEntry): Promise<void> {
    const write = () => writeJsonFile(this.path(entry.name), { version: 1, ...entry });
    try {
      await write();
    } catch (error) {
      if (!isNoSpace(error)) throw error;
      await rm(this.reservePath(), { force: true });
      await write();
    }
  }

  async read(name: string): Promise<JournalEntry | null> {
    const entry = (await readJsonFile(this.path(name))) as Partial<JournalEntry> | null;
    const valid = entry?.name === name && (entry.swap === 'commit' || entry.swap === 'rollback') && ['swapping', 'gate', 'settling'].includes(entry.phase ?? '');
    return valid ? { name, swap: entry.swap!, phase: entry.phase!, replacing: entry.replacing === true, note: entry.note ?? null } : null;
  }

  async remove(name: string): Promise<void> {
    await rm(this.path(name), { force: true });
    await this.reserve();
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

  /** Beside the journal's entries, not among them. */
  private reservePath(): string {
    return join(this.dir, '..', 'journal-reserve');
  }
}

function isNoSpace(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) if ((e as NodeJS.ErrnoException).code === 'ENOSPC') return true;
  return false;
}
