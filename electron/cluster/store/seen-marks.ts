// The revision of the last record this host took under each key of each bucket, kept on disk: a record must name it
// (or a later one) as the revision it was written over, so one written before it is never taken again, also after a
// restart. The server's check of that revision is the first guard (sealed.ts); this one holds should a key's history
// ever be erased. (An earlier Hangar kept signing times in cluster-seen.json: they order nothing now.)
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
    this.file = new CoalescedFile(join(stateDir, 'cluster-revisions.json'));
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

  /** Notes `revision` for the key when it is past its mark. */
  raise(bucket: string, key: string, revision: number): void {
    const keys = (this.marks[bucket] ??= {});
    if ((keys[key] ?? 0) >= revision) return;
    keys[key] = revision;
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
