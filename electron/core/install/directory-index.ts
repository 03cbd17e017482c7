// What a listing knows of each directory of the backends directory, kept current by the store's own changes and by
// fs.watch events (LocalAI, or a person, changing the same directory), so a listing reads again only what changed:
// a directory that appeared or vanished, or whose metadata.json or run.sh changed (in place, by a rename, by chmod).
// Watches: the backends directory (entries appearing, vanishing, renamed), each directory in it (its files), and
// `.hangar` with `.hangar/previous` (rollback trees, which a listing shows). Before it answers, a listing lets the
// event loop read every event the kernel already queued, so a change made before the call is in the answer. The
// kernel drops events when its queue overflows, unseen by fs.watch: a slow backstop compares what each directory's
// files are now with what was read, off the call path. Each change makes a new version of the listing, and says
// which names it changed, so what is made from a listing can be brought up to date from only those.
import { watch, type FSWatcher } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { PersistentMap } from '../persistent-map.ts';

/** The files of a directory a listing reads. */
const WATCHED_FILES = new Set(['metadata.json', 'run.sh']);
const BACKSTOP_MS = 60_000;
/** How many versions back the index can say what changed; a listing older than that is made whole again. */
const CHANGES_KEPT = 256;

export interface DirectoryIndexOptions<T extends object> {
  dir: string;
  /** Hangar's own folder in `dir`: not listed; its `previous` folder is watched for the names in it. */
  workDir: string;
  /** Every directory name in `dir` but workDir. */
  names(): Promise<string[]>;
  /** Reads one directory; null when it is not one (any more). */
  read(name: string): Promise<T | null>;
  /** What `read` depends on, cheaply (the backstop compares it). */
  stamp(name: string): Promise<string>;
}

/** Every directory at one moment, unchanged by what changes after. */
export interface Directories<T> {
  /** Another version: what a listing shows changed. */
  version: number;
  byName: PersistentMap<string, T>;
  /** The names whose directory in this version differs from version `since`, or null when the index cannot say. */
  changedSince(since: number): string[] | null;
}

export class DirectoryIndex<T extends object> {
  private readonly entries = new Map<string, { value: T; stamp: string }>();
  /** The entries' values as they stand (while watching), their version, and the names each recent version changed. */
  private current = PersistentMap.of<string, T>();
  private version = 0;
  private changes: { version: number; names: string[] }[] = [];
  private readonly watchers = new Map<string, FSWatcher>();
  /** Names to read again; `renamed` ones are watched again too (a watch follows the directory it was set on). */
  private readonly dirty = new Set<string>();
  private readonly renamed = new Set<string>();
  /** Read every name again: the first listing, a watcher that failed, an event without a name. */
  private everything = true;
  private previousAppeared = false;
  private top: FSWatcher | null = null;
  private work: FSWatcher | null = null;
  private previous: FSWatcher | null = null;
  private backstop: NodeJS.Timeout | null = null;
  private listed: { version: number; list: T[] } | null = null;
  private refreshing: Promise<void> | null = null;
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

  close(): void {
    this.watching = false;
    for (const watcher of [this.top, this.work, this.previous, ...this.watchers.values()]) watcher?.close();
    this.watchers.clear();
    this.top = this.work = this.previous = null;
    if (this.backstop) clearInterval(this.backstop);
    this.invalidateAll();
    this.forgetChanges();
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
    if (!this.watching) return this.options.read(name);
    await this.settle();
    return this.current.get(name) ?? null;
  }

  /** Lets every event already queued in, and reads again what they (or the store) said changed. */
  async settle(): Promise<void> {
    // Two turns of the loop: the second starts with a poll that reads every event queued before this call.
    await nextTurn();
    await nextTurn();
    while (this.refreshing) await this.refreshing;
    if (!this.everything && this.dirty.size === 0 && !this.previousAppeared) return;
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
    const found: (T | null)[] = await Promise.all(names.map((name) => this.options.read(name)));
    const byName = new Map<string, T>();
    names.forEach((name, i) => found[i] && byName.set(name, found[i]));
    return byName;
  }

  private async refresh(): Promise<void> {
    const names = new Set(this.dirty);
    this.dirty.clear();
    if (this.everything) {
      this.everything = false;
      for (const name of await this.options.names()) names.add(name);
      for (const name of this.entries.keys()) names.add(name);
      for (const name of this.watchers.keys()) this.renamed.add(name);
      for (const name of names) this.renamed.add(name);
    }
    if (this.previousAppeared) {
      this.previousAppeared = false;
      this.watchPrevious();
      for (const name of await readdir(join(this.options.dir, this.options.workDir, 'previous')).catch(() => [])) names.add(name);
    }
    const changed = (await Promise.all([...names].map(async (name) => ((await this.reread(name)) ? [name] : [])))).flat();
    if (changed.length === 0) return;
    this.current = this.current.with(changed.map((name) => [name, this.entries.get(name)?.value]));
    this.version++;
    this.changes.push({ version: this.version, names: changed });
    if (this.changes.length > CHANGES_KEPT) this.changes.shift();
  }

  /** True when what the listing shows of `name` changed. */
  private async reread(name: string): Promise<boolean> {
    // Watched first, read after: a change after the read is an event, one before it is in the read.
    if (this.renamed.delete(name)) this.watchChild(name);
    const [value, stamp] = await Promise.all([this.options.read(name), this.options.stamp(name)]);
    const before = this.entries.get(name);
    if (value === null) {
      this.entries.delete(name);
      this.watchers.get(name)?.close();
      this.watchers.delete(name);
      return before !== undefined;
    }
    if (before && JSON.stringify(before.value) === JSON.stringify(value)) {
      before.stamp = stamp;
      return false;
    }
    this.entries.set(name, { value, stamp });
    return true;
  }

  private watchChild(name: string): void {
    this.watchers.get(name)?.close();
    this.watchers.delete(name);
    const watcher = this.watchDir(join(this.options.dir, name), (file) => {
      if (file !== null && !WATCHED_FILES.has(file)) return;
      this.touch(name);
      this.heard(name);
    });
    if (watcher) this.watchers.set(name, watcher);
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
   * A watcher on `path` that reports the changed entry's name (null: unknown). A directory that cannot be watched
   * (gone already, or out of watches) is read on every listing instead: correct, only slower.
   */
  private watchDir(path: string, changed: (name: string | null) => unknown): FSWatcher | null {
    try {
      const watcher = watch(path, { persistent: false }, (_event, name) => changed(name === null ? null : String(name)));
      watcher.on('error', () => {
        watcher.close();
        this.invalidateAll();
      });
      return watcher;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') this.invalidateAll();
      return null;
    }
  }

  /** The backstop: what changed unseen (the kernel's event queue overflowed) is read at the next listing. */
  private async verify(): Promise<void> {
    const names = new Set(await this.options.names().catch(() => [] as string[]));
    if (names.size !== this.entries.size || [...names].some((n) => !this.entries.has(n))) return this.invalidateAll();
    for (const [name, entry] of this.entries) {
      if ((await this.options.stamp(name)) !== entry.stamp) this.touch(name, true);
    }
  }
}

/** Identity, mode, size and change time of a path, or '-' when it is missing. */
export async function pathStamp(path: string): Promise<string> {
  const s = await stat(path).catch(() => null);
  return s ? `${s.ino}.${s.mode}.${s.size}.${s.ctimeMs}` : '-';
}
