// Records kept by the cluster (or, for a host in no cluster, by its home): a map of keys to values with revisions,
// as every reader sees it, and writes that can be made conditional on the revision a writer read (compare-and-set).
import { EventEmitter } from 'node:events';
import { HangarError } from '../../../shared/errors.ts';
import { CoalescedFile } from '../../core/coalesced-file.ts';

export interface RecordEntry<T> {
  key: string;
  value: T;
  /** Changes with every write, and grows across the whole store: the later of two records is the one with the higher. */
  revision: number;
  /** The key that signed it, and its id (this host's own for a record kept in the home). */
  signer: string;
  by: string;
  /** When it was signed, in ms, by its writer's clock: shown, never used to order records. */
  at: number;
}

/** A value in the store signed by a key this host does not trust: listed with that key's id, never taken. */
export interface UntrustedRecord<T = unknown> {
  key: string;
  by: string;
  at: number;
  /** The value itself when it is small (a desired version); null for a large one, which is only listed. */
  value: T | null;
}

/** A conditional write found another revision than the one it named: someone else wrote first. */
export class RecordConflict extends HangarError {
  /** The key's revision the store holds now, when it said. */
  readonly head: number | null;

  constructor(message = 'changed meanwhile', head: number | null = null) {
    super('conflict', message);
    this.head = head;
  }
}

export interface Records<T> {
  all(): RecordEntry<T>[];
  get(key: string): RecordEntry<T> | undefined;
  /** Resolves once the stored values have been read at least once (or could not be, for now). */
  ready(): Promise<void>;
  /** Writes a key that must not exist yet; RecordConflict if it does. */
  create(key: string, value: T): Promise<number>;
  /** Writes a key still at `revision`; RecordConflict if it moved on. */
  update(key: string, value: T, revision: number): Promise<number>;
  /** Writes a key over whatever it holds now; the record written is the store's newest. */
  put(key: string, value: T): Promise<number>;
  remove(key: string): Promise<void>;
  /** The values signed by keys this host does not trust. */
  untrusted(): UntrustedRecord<T>[];
  on(event: 'change', listener: (key: string, entry: RecordEntry<T> | undefined) => void): unknown;
  off(event: 'change', listener: (key: string, entry: RecordEntry<T> | undefined) => void): unknown;
  on(event: 'untrusted', listener: (key: string) => void): unknown;
  off(event: 'untrusted', listener: (key: string) => void): unknown;
}

/** Keeps the map every implementation shares and says what changed. */
/** `change`: what this host takes changed; `untrusted`: a value it does not take was listed or unlisted. */
export class RecordMap<T> extends EventEmitter<{ change: [string, RecordEntry<T> | undefined]; untrusted: [string] }> {
  protected readonly entries = new Map<string, RecordEntry<T>>();

  all(): RecordEntry<T>[] {
    return [...this.entries.values()];
  }

  get(key: string): RecordEntry<T> | undefined {
    return this.entries.get(key);
  }

  /** Takes an entry unless one at a later revision is known already. */
  protected take(entry: RecordEntry<T>): void {
    const known = this.entries.get(entry.key);
    if (known && known.revision >= entry.revision) return;
    this.entries.set(entry.key, entry);
    this.emit('change', entry.key, entry);
  }

  protected drop(key: string): void {
    if (this.entries.delete(key)) this.emit('change', key, undefined);
  }
}

/**
 * A host in no cluster keeps its records in one JSON file of its home (a list of values): one host writes it, so
 * compare-and-set needs nothing but the revision kept in memory.
 */
export class FileRecords<T> extends RecordMap<T> implements Records<T> {
  private readonly file: CoalescedFile<T[]>;
  private revision = 0;
  private readonly loaded: Promise<void>;

  constructor(
    path: string,
    private readonly keyOf: (value: T) => string,
    private readonly owner: { id: string; publicKey: string },
    /** Reads one stored value, or null to skip it. */
    read: (raw: unknown) => T | null,
  ) {
    super();
    this.file = new CoalescedFile(path);
    this.loaded = this.file.read().then((raw) => {
      for (const item of Array.isArray(raw) ? raw : []) {
        const value = read(item);
        if (value !== null) this.take(this.entry(this.keyOf(value), value));
      }
    });
  }

  ready(): Promise<void> {
    return this.loaded;
  }

  async create(key: string, value: T): Promise<number> {
    await this.loaded;
    if (this.entries.has(key)) throw new RecordConflict();
    return this.write(key, value);
  }

  async update(key: string, value: T, revision: number): Promise<number> {
    await this.loaded;
    if (this.entries.get(key)?.revision !== revision) throw new RecordConflict();
    return this.write(key, value);
  }

  async put(key: string, value: T): Promise<number> {
    await this.loaded;
    return this.write(key, value);
  }

  /** One host writes the file: it holds nothing else. */
  untrusted(): UntrustedRecord<T>[] {
    return [];
  }

  async remove(key: string): Promise<void> {
    await this.loaded;
    this.drop(key);
    this.save();
  }


  flush(): Promise<void> {
    return this.file.flush();
  }

  private write(key: string, value: T): number {
    const entry = this.entry(key, value);
    this.take(entry);
    this.save();
    return entry.revision;
  }

  private entry(key: string, value: T): RecordEntry<T> {
    return { key, value, revision: ++this.revision, signer: this.owner.publicKey, by: this.owner.id, at: Date.now() };
  }

  private save(): void {
    this.file.save(this.all().map((e) => e.value));
  }
}
