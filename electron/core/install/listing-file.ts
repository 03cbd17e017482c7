// The last listing of the backends directory, kept in the home's state between runs, so a start reads again only
// the directories that changed while no Hangar watched (LocalAI installing, a person editing a metadata.json). An
// entry is believed only while its directory's stamp is the one it was read with; the file is a cache, never the
// truth: missing, unreadable, or made for another directory or by another reader, it is ignored.
import { readFileSync } from 'node:fs';
import { warnWriteFailed, writeFileAtomic } from '../state-file.ts';
import { inSlices } from './slices.ts';

/** A burst of changes (a first listing, a rollout) costs one write; a file some changes behind costs only their reads. */
const SAVE_DELAY_MS = 10_000;

export interface KeptEntry<T> {
  stamp: string;
  value: T;
}

interface OnDisk {
  dir: string;
  by: string;
  /** [name, stamp, value] */
  entries: [string, string, unknown][];
}

export class ListingFile<T> {
  private source: (() => Iterable<[string, KeptEntry<T>]>) | null = null;
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  private failed = false;

  /** `by`: what made the entries (the reader's format, the user whose access they say); another one is not believed. */
  constructor(
    private readonly path: string,
    private readonly header: { dir: string; by: string },
  ) {}

  /** Read in one go at the start: in pieces through the thread pool, each piece would wait on the start's other work. */
  load(): Map<string, KeptEntry<T>> {
    let parsed: Partial<OnDisk> | null;
    try {
      parsed = JSON.parse(readFileSync(this.path, 'utf8')) as Partial<OnDisk> | null;
    } catch {
      return new Map();
    }
    if (parsed?.dir !== this.header.dir || parsed.by !== this.header.by || !Array.isArray(parsed.entries)) return new Map();
    const kept = new Map<string, KeptEntry<T>>();
    for (const entry of parsed.entries) {
      if (!Array.isArray(entry) || typeof entry[0] !== 'string' || typeof entry[1] !== 'string' || typeof entry[2] !== 'object' || entry[2] === null) continue;
      kept.set(entry[0], { stamp: entry[1], value: entry[2] as T });
    }
    return kept;
  }

  /** Writes the entries `source` gives when it is called, a little later; the newest source wins. */
  save(source: () => Iterable<[string, KeptEntry<T>]>): void {
    this.source = source;
    this.timer ??= setTimeout(() => void this.flush(), SAVE_DELAY_MS).unref();
  }

  /** Writes now what waits to be written. */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const source = this.source;
    this.source = null;
    if (source) this.writing = this.writing.then(() => this.write(source));
    await this.writing;
  }

  private async write(source: () => Iterable<[string, KeptEntry<T>]>): Promise<void> {
    // Thousands of entries: made into JSON a slice at a time (each entry is believed on its own stamp, so entries
    // changed meanwhile may be of a later moment than others).
    const entries: string[] = [];
    await inSlices(source(), ([name, { stamp, value }]) => entries.push(JSON.stringify([name, stamp, value])));
    const { dir, by } = this.header;
    try {
      await writeFileAtomic(this.path, `{"dir":${JSON.stringify(dir)},"by":${JSON.stringify(by)},"entries":[${entries.join(',')}]}`);
      this.failed = false;
    } catch (error) {
      // Only the next start is slower: it reads every directory.
      if (!this.failed) warnWriteFailed(error as Error);
      this.failed = true;
    }
  }
}
