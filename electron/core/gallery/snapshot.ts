// What one gallery holds after a load: its entries, a by-name index, and the problems the load ran into.
import { parseIndex, type IndexParser } from './index-parser.ts';
import type { GalleryEntry, IndexSource } from './types.ts';

export interface Snapshot {
  entries: GalleryEntry[];
  /** Lower-cased name -> first entry of that name (LocalAI matches names case-insensitively, first wins). */
  byName: Map<string, GalleryEntry>;
  /** Entries that were skipped, one line each. */
  problems: string[];
  /** Why the gallery could not be (re)loaded, or null. */
  failure: string | null;
}

/** The gallery interface Galleries composes: a local file or a remote URL. */
export interface GallerySource {
  readonly name: string;
  /** The file's path or the URL it reads. */
  readonly location: string;
  /** The snapshot, loading or re-checking first as the kind of source needs. */
  current(): Promise<Snapshot>;
  /** The last snapshot, without loading. */
  last(): Snapshot | null;
  refresh(): Promise<void>;
  close(): void;
}

export async function snapshotFromText(text: string, source: IndexSource, parse: IndexParser = parseIndex): Promise<Snapshot> {
  try {
    const { entries, errors } = await parse(text, source);
    const byName = new Map<string, GalleryEntry>();
    for (const entry of entries) {
      const key = entry.name.toLowerCase();
      if (!byName.has(key)) byName.set(key, entry);
    }
    return { entries, byName, problems: errors.map((error) => `gallery "${source.gallery}": ${error}`), failure: null };
  } catch (error) {
    return failedSnapshot((error as Error).message);
  }
}

export function failedSnapshot(failure: string, keep?: Snapshot | null): Snapshot {
  return { entries: keep?.entries ?? [], byName: keep?.byName ?? new Map(), problems: keep?.problems ?? [], failure };
}

/** Holds a gallery's snapshot and reports a change of its content (not the first fill) to onChange. */
export class SnapshotSlot {
  value: Snapshot | null = null;
  /** What the snapshot was built from (index text or failure cause). */
  private contentKey: string | null = null;

  constructor(private readonly onChange: () => void) {}

  /** Its sources call one set at a time: each awaits its load before the next starts. */
  async set(contentKey: string, build: () => Snapshot | Promise<Snapshot>): Promise<void> {
    if (contentKey === this.contentKey && this.value) return;
    const first = this.value === null;
    const value = await build();
    this.contentKey = contentKey;
    this.value = value;
    if (!first) this.onChange();
  }
}
