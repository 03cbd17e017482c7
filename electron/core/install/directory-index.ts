// What a listing knows of each directory of the backends directory, kept current by the store's own changes and by
// fs.watch events (LocalAI, or a person, changing the same directory), so a listing reads again only what changed:
// a directory that appeared or vanished, or whose metadata.json or run.sh changed (in place, by a rename, by chmod).
// Watches: the backends directory (entries appearing, vanishing, renamed), each directory in it (its files), and
// `.hangar` with `.hangar/previous` (rollback trees, which a listing shows). Before it answers, a listing lets the
// event loop read every event the kernel already queued, so a change made before the call is in the answer.
// Each directory's entry carries a stamp of what its read depended on (its files' identity, size, mode and change
// time): a start believes the listing kept from the last run where the stamps still match, and reads the rest. A
// directory whose watch cannot be set (out of watches) has its stamp checked by every listing instead. The kernel
// drops events when its queue overflows, unseen by fs.watch: a slow backstop checks every stamp, off the call path.
// Each change makes a new version of the listing, and says which names it changed, so what is made from a listing
// can be brought up to date from only those.
import { watch, type FSWatcher } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { PersistentMap } from '../persistent-map.ts';
import type { KeptEntry, ListingFile } from './listing-file.ts';
import { inSlices } from './slices.ts';

/** The files of a directory a listing reads. */
const WATCHED_FILES = new Set(['metadata.json', 'run.sh']);
const BACKSTOP_MS = 60_000;
/** How many versions back the index can say what changed; a listing older than that is made whole again. */
const CHANGES_KEPT = 256;

/** Reads for one pass over many names, with blocking calls (the index makes them a slice at a time). */
export interface DirectoryReader<T> {
  /** What a read of `name` depends on; null when no stamp can vouch for a read (a file changed a moment ago). */
  stamp(name: string): string | null;
  /** One directory, null when it is not one (any more), with its stamp taken before the read. */
  read(name: string): { value: T | null; stamp: string | null };
}

export interface DirectoryIndexOptions<T extends object> {
  dir: string;
  /** Hangar's own folder in `dir`: not listed; its `previous` folder is watched for the names in it. */
  workDir: string;
  /** Every directory name in `dir` but workDir. */
  names(): Promise<string[]>;
  reader(): Promise<DirectoryReader<T>>;
  /** Where the listing is kept between runs (null: it is not). */
  kept: ListingFile<T> | null;
}

/** Every directory at one moment, unchanged by what changes after. */
export interface Directories<T> {
  /** Another version: what a listing shows changed. */
  version: number;
  byName: PersistentMap<string, T>;
  /** The names whose directory in this version differs from version `since`, or null when the index cannot say. */
  changedSince(since: number): string[] | null;
}

type Entry<T> = { value: T; stamp: string | null };

export class DirectoryIndex<T extends object> {
  private readonly entries = new Map<string, Entry<T>>();
  /** The entries' values as they stand (while watching), their version, and the names each recent version changed. */
  private current = PersistentMap.of<string, T>();
  private version = 0;
  private changes: { version: number; names: string[] }[] = [];
  private readonly watchers = new Map<string, FSWatcher>();
  /** Entries whose directory has no watch (none could be set): each listing checks their stamps. */
  private readonly unwatched = new Set<string>();
  /** Names to read again; `renamed` ones are watched again too (a watch follows the directory it was set on). */
  private readonly dirty = new Set<string>();
  private readonly renamed = new Set<string>();
  /** Check every name: the first listing, a watcher that failed, an event without a name. */
  private everything = true;
  private previousAppeared = false;
  /** The last run's listing, until the first listing has used it. */
  private keptLoaded: Map<string, KeptEntry<T>> | null = null;
  private top: FSWatcher | null = null;
  private work: FSWatcher | null = null;
  private previous: FSWatcher | null = null;
  private backstop: NodeJS.Timeout | null = null;
  private listed: { version: number; list: T[] } | null = null;
  private refreshing: Promise<void> | null = null;
  /** How many refreshes have begun. */
  private refreshes = 0;
  private watching = false;
  /** Told each name fs.watch saw change, whoever changed it. */
  private heard: (name: string) => void = () => undefined;
  /** Bumped on every change a listing can see (a kept tree too); the store's kept trees are cached on it. */
  generation = 0;

  constructor(private readonly options: DirectoryIndexOptions<T>) {}

  get active(): boolean {
    return this.watching;
  }

  /**
   * Starts watching; until then (and after close) every listing reads every directory. `heard` is told each name
   * whose directory (or rollback tree) an fs.watch event said changed.
   */
  start(heard: (name: string) => void = () => undefined): void {
    if (this.watching) return;
    const { dir, workDir } = this.options;
    this.watching = true;
    this.heard = heard;
    this.everything = true;
    this.forgetChanges();
    this.keptLoaded = this.options.kept?.load() ?? null;
    this.top = this.watchDir(dir, (name) => {
      if (name === null) this.invalidateAll();
      else if (name !== workDir) {
        this.touch(name, true);
        this.heard(name);
      } else this.watchWork();
    });
    this.watchWork();
    this.backstop = setInterval(() => void this.verify(), BACKSTOP_MS).unref();
  }

  /** Stops watching; resolves once the listing kept for the next run is written. */
  async close(): Promise<void> {
    this.watching = false;
    for (const watcher of [this.top, this.work, this.previous, ...this.watchers.values()]) watcher?.close();
    this.watchers.clear();
    this.unwatched.clear();
    this.top = this.work = this.previous = null;
    if (this.backstop) clearInterval(this.backstop);
    this.invalidateAll();
    this.forgetChanges();
    await this.options.kept?.flush();
  }

  /** `name` changed (by Hangar, or an event said so): the next listing reads it again. */
  touch(name: string, renamed = false): void {
    this.dirty.add(name);
    if (renamed) this.renamed.add(name);
    this.generation++;
  }

  invalidateAll(): void {
    this.everything = true;
    this.generation++;
  }

  /** Every directory, by name; the same array while nothing changed. */
  async list(): Promise<T[]> {
    if (!this.watching) return [...(await this.readAll()).values()];
    await this.settle();
    if (this.listed?.version !== this.version) {
      const byName = this.current;
      this.listed = { version: this.version, list: [...byName.keys()].sort().map((name) => byName.get(name)!) };
    }
    return this.listed.list;
  }

  /** Every directory, as a version of them that stays as it is. */
  async directories(): Promise<Directories<T>> {
    if (!this.watching) {
      const byName = PersistentMap.adopt(await this.readAll());
      this.forgetChanges();
      return { version: this.version, byName, changedSince: () => null };
    }
    await this.settle();
    const version = this.version;
    return { version, byName: this.current, changedSince: (since) => this.changedBetween(since, version) };
  }

  /** One directory, read again unless the index knows it is unchanged. */
  async get(name: string): Promise<T | null> {
    if (!this.watching) return (await this.options.reader()).read(name).value;
    await this.settle();
    return this.current.get(name) ?? null;
  }

  /** Lets every event already queued in, and reads again what they (or the store) said changed. */
  async settle(): Promise<void> {
    // Two turns of the loop: the second starts with a poll that reads every event queued before this call.
    await nextTurn();
    await nextTurn();
    const begun = this.refreshes;
    while (this.refreshing) {
      await this.refreshing;
      // Begun after this call's events were let in, that refresh answered for them (and for the stamps it checked).
      if (this.refreshes > begun) return;
    }
    if (!this.everything && this.dirty.size === 0 && !this.previousAppeared && this.unwatched.size === 0) return;
    this.refreshes++;
    this.refreshing = this.refresh().finally(() => (this.refreshing = null));
    await this.refreshing;
  }

  /** The names changed after version `since` up to version `until`, while the changes kept reach back that far. */
  private changedBetween(since: number, until: number): string[] | null {
    if (since === until) return [];
    if (since > until || (this.changes[0]?.version ?? Infinity) > since + 1) return null;
    return [...new Set(this.changes.filter((c) => c.version > since && c.version <= until).flatMap((c) => c.names))];
  }

  /** Versions before now can no longer be brought up to date from the changes: the index was not watching. */
  private forgetChanges(): void {
    this.version++;
    this.changes = [];
  }

  /** Every directory read now, by name in order. */
  private async readAll(): Promise<Map<string, T>> {
    const names = (await this.options.names()).sort();
    const reader = await this.options.reader();
    const byName = new Map<string, T>();
    await inSlices(names, (name) => {
      const { value } = reader.read(name);
      if (value) byName.set(name, value);
    });
    return byName;
  }

  private async refresh(): Promise<void> {
    const read = new Set(this.dirty);
    this.dirty.clear();
    // Names a stamp may vouch for: on a first listing, every one (the last run's listing says what they were).
    const check = new Set(this.everything ? [] : this.unwatched);
    if (this.everything) {
      this.everything = false;
      for (const name of await this.options.names()) check.add(name);
      for (const name of this.entries.keys()) check.add(name);
    }
    if (this.previousAppeared) {
      this.previousAppeared = false;
      this.watchPrevious();
      for (const name of await readdir(join(this.options.dir, this.options.workDir, 'previous')).catch(() => [])) read.add(name);
    }
    const kept = this.keptLoaded;
    this.keptLoaded = null;
    const reader = await this.options.reader();
    const changed: string[] = [];
    let unsaved = false;
    await inSlices(new Set([...read, ...check]), (name) => {
      const outcome = this.update(name, reader, read.has(name), kept);
      kept?.delete(name);
      if (outcome === 'restamped' || outcome === 'changed') unsaved = true;
      if (outcome === 'adopted' || outcome === 'changed') changed.push(name);
    });
    // What the last run kept of directories gone since then leaves the file too.
    if (unsaved || (kept && kept.size > 0)) this.options.kept?.save(() => stamped(this.entries));
    if (changed.length === 0) return;
    this.current = this.current.with(changed.map((name) => [name, this.entries.get(name)?.value]));
    this.version++;
    this.changes.push({ version: this.version, names: changed });
    if (this.changes.length > CHANGES_KEPT) this.changes.shift();
  }

  /**
   * Brings the entry of `name` up to date: believed where its stamp still matches (`kept` offers last run's), else
   * read. 'same': nothing a listing shows changed, nor the stamp; 'restamped': only the stamp changed.
   */
  private update(name: string, reader: DirectoryReader<T>, mustRead: boolean, kept: Map<string, KeptEntry<T>> | null): 'same' | 'restamped' | 'adopted' | 'changed' {
    const before = this.entries.get(name);
    // Watched first, stamped or read after: a change after that is an event, one before it is in the stamp or read.
    const watchFirst = this.renamed.delete(name) || !this.watchers.has(name);
    if (watchFirst) this.watchChild(name);
    if (!mustRead) {
      const known = before ?? kept?.get(name);
      if (known?.stamp != null && reader.stamp(name) === known.stamp) {
        if (before) return 'same';
        this.entries.set(name, { value: known.value, stamp: known.stamp });
        return 'adopted';
      }
      // Changed unseen: a directory replaced keeps the old one's watch.
      if (!watchFirst) this.watchChild(name);
    }
    const { value, stamp } = reader.read(name);
    if (value === null) {
      this.entries.delete(name);
      this.watchers.get(name)?.close();
      this.watchers.delete(name);
      this.unwatched.delete(name);
      return before === undefined ? 'same' : 'changed';
    }
    if (before && JSON.stringify(before.value) === JSON.stringify(value)) {
      const restamped = before.stamp !== stamp;
      before.stamp = stamp;
      return restamped ? 'restamped' : 'same';
    }
    this.entries.set(name, { value, stamp });
    return 'changed';
  }

  private watchChild(name: string): void {
    if (!this.watching) return;
    this.watchers.get(name)?.close();
    this.watchers.delete(name);
    const watcher = this.watchDir(
      join(this.options.dir, name),
      (file) => {
        if (file !== null && !WATCHED_FILES.has(file)) return;
        this.touch(name);
        this.heard(name);
      },
      // Its stamp is checked on every listing until a watch is set again.
      () => {
        this.watchers.delete(name);
        this.unwatched.add(name);
      },
    );
    if (watcher) {
      this.watchers.set(name, watcher);
      this.unwatched.delete(name);
    } else this.unwatched.add(name);
  }

  /** `.hangar`: its `previous` folder replaced or made, kept.json written. */
  private watchWork(): void {
    this.work?.close();
    this.work = this.watchDir(join(this.options.dir, this.options.workDir), (name) => {
      if (name === null || name === 'previous') this.previousAppeared = true;
      this.generation++;
    });
    this.previousAppeared = true;
    this.generation++;
  }

  private watchPrevious(): void {
    this.previous?.close();
    this.previous = this.watchDir(join(this.options.dir, this.options.workDir, 'previous'), (name) => {
      if (name === null) return this.invalidateAll();
      this.touch(name);
      this.heard(name);
    });
  }

  /**
   * A watcher on `path` that reports the changed entry's name (null: unknown); `failed` when it stops or cannot be
   * set (out of watches): by default every directory is checked at the next listing. A path that is gone has none.
   */
  private watchDir(path: string, changed: (name: string | null) => unknown, failed = () => this.invalidateAll()): FSWatcher | null {
    try {
      const watcher = watch(path, { persistent: false }, (_event, name) => changed(name === null ? null : String(name)));
      watcher.on('error', () => {
        watcher.close();
        failed();
      });
      return watcher;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') failed();
      return null;
    }
  }

  /** The backstop: what changed unseen (the kernel's event queue overflowed) is read at the next listing. */
  private async verify(): Promise<void> {
    const names = new Set(await this.options.names().catch(() => [] as string[]));
    if (names.size !== this.entries.size || [...names].some((n) => !this.entries.has(n))) return this.invalidateAll();
    const reader = await this.options.reader();
    await inSlices([...this.entries], ([name, entry]) => {
      if (entry.stamp === null || reader.stamp(name) !== entry.stamp) this.touch(name, true);
    });
  }
}

/** The entries a stamp vouches for, as the listing kept for the next run. */
function* stamped<T>(entries: Map<string, Entry<T>>): Iterable<[string, KeptEntry<T>]> {
  for (const [name, { value, stamp }] of entries) if (stamp !== null) yield [name, { value, stamp }];
}
