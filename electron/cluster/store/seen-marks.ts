// The newest sequence this host has taken for each key of each bucket, kept on disk: a value written back older than
// one taken before (a captured record replayed, an old pin over its unpin) is never taken again, also after a restart.
// A key deleted keeps its mark, so a replay cannot bring back a record that was removed.
import { join } from 'node:path';
import { CoalescedFile } from '../../core/coalesced-file.ts';

/** Marks kept per bucket; past this the lowest go (those of the oldest records). */
const KEPT_PER_BUCKET = 10_000;

type Marks = Record<string, Record<string, number>>;

export class SeenMarks {
  private marks: Marks = {};
  private readonly file: CoalescedFile<Marks>;
  private readonly loaded: Promise<void>;

  constructor(stateDir: string) {
    this.file = new CoalescedFile(join(stateDir, 'cluster-seen.json'));
    this.loaded = this.file.read().then((raw) => {
      if (typeof raw !== 'object' || raw === null) return;
      for (const [bucket, keys] of Object.entries(raw)) {
        if (typeof keys !== 'object' || keys === null) continue;
        this.marks[bucket] = Object.fromEntries(Object.entries(keys).filter((e): e is [string, number] => Number.isSafeInteger(e[1])));
      }
    });
  }

  ready(): Promise<void> {
    return this.loaded;
  }

  get(bucket: string, key: string): number {
    return this.marks[bucket]?.[key] ?? 0;
  }

  /** Notes `at` for the key when it is newer than its mark. */
  raise(bucket: string, key: string, at: number): void {
    const keys = (this.marks[bucket] ??= {});
    if ((keys[key] ?? 0) >= at) return;
    keys[key] = at;
    if (Object.keys(keys).length > KEPT_PER_BUCKET) {
      const oldest = Object.entries(keys).sort((a, b) => a[1] - b[1]).slice(0, Object.keys(keys).length - KEPT_PER_BUCKET);
      for (const [old] of oldest) delete keys[old];
    }
    this.file.save(this.marks);
  }

  flush(): Promise<void> {
    return this.file.flush().catch(() => undefined);
  }
}
