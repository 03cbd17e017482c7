// Several galleries at once, in order. Names are `name` (first gallery that lists it) or `gallery@name`.
import { cachedParser, type IndexParser } from './index-parser.ts';
import { EventEmitter } from 'node:events';
import { HangarError } from '../../../shared/errors.ts';
import { FileGallery } from './file-gallery.ts';
import { galleryNames, parseLocation } from './location.ts';
import { isEntryCompatible, isMeta, resolveMetaKey } from './meta.ts';
import type { GallerySource, Snapshot } from './snapshot.ts';
import type { GalleryProblem } from '../../../shared/types.ts';
import { hidePasswords } from '../../../shared/url-password.ts';
import type { GalleryEntry, GallerySpec } from './types.ts';
import { UrlGallery } from './url-gallery.ts';

function incompatible(what: string, capability: string): HangarError {
  return new HangarError('bad-input', `backend "${what}" does not run on this machine (capability "${capability}")`);
}

export interface ResolvedEntry {
  /** The concrete backend to install. */
  entry: GalleryEntry;
  /** The meta backend it was resolved from, or null when the name was concrete. */
  meta: GalleryEntry | null;
  /** The capabilities key that picked the build (the requested capability when the name was concrete). */
  capability: string;
}

/** Emits 'changed' (gallery name) when a loaded gallery's content changes. */
export class Galleries extends EventEmitter {
  private sources: GallerySource[] = [];
  private readonly fetchImpl: typeof fetch;
  /** The entries of the last snapshots: the same array while no gallery changed. */
  private lastEntries: { snapshots: Snapshot[]; entries: GalleryEntry[] } | null = null;

  private readonly parse: IndexParser | undefined;

  /** `parseCacheDir`: where parses of index texts are kept for the next start (see parse-cache.ts). */
  constructor(opts: { specs: GallerySpec[]; fetch?: typeof fetch; parseCacheDir?: string }) {
    super();
    this.parse = opts.parseCacheDir === undefined ? undefined : cachedParser(opts.parseCacheDir);
    this.fetchImpl = opts.fetch ?? globalThis.fetch;
    this.sources = this.sourcesFor(opts.specs, []);
  }

  /** Reads `specs` from now on; a gallery kept under the same name and location keeps what it loaded. */
  reconfigure(specs: GallerySpec[]): void {
    const previous = this.sources;
    this.sources = this.sourcesFor(specs, previous);
    for (const source of previous) if (!this.sources.includes(source)) source.close();
    this.emit('changed', null);
  }

  private sourcesFor(specs: GallerySpec[], reusable: GallerySource[]): GallerySource[] {
    const locations = specs.map((spec) => parseLocation(spec.location));
    const names = galleryNames(specs, locations);
    const changed = (gallery: string) => this.emit('changed', gallery);
    return locations.map((location, index) => {
      const name = names[index]!;
      const where = location.kind === 'file' ? location.path : location.url;
      const kept = reusable.find((source) => source.name === name && source.location === where);
      if (kept) return kept;
      return location.kind === 'file' ? new FileGallery(name, location.path, changed, this.parse) : new UrlGallery(name, location.url, this.fetchImpl, changed, this.parse);
    });
  }

  names(): string[] {
    return this.sources.map((source) => source.name);
  }

  /**
   * Gallery `name` as LocalAI records it in metadata.json (gallery_url, the URL its config names): a file as `file://`
   * and its path, which LocalAI reads by cutting the prefix off, undecoded; a URL as it is, but for a password in it
   * (LocalAI only records and reports the field).
   */
  galleryUrlOf(name: string): string | null {
    const source = this.sources.find((s) => s.name === name);
    if (!source) return null;
    return source instanceof FileGallery ? `file://${source.location}` : hidePasswords(source.location);
  }

  /** Every entry of every gallery, galleries in order; a gallery that failed to load contributes what it still has. */
  async entries(): Promise<GalleryEntry[]> {
    const snapshots = await Promise.all(this.sources.map((source) => source.current()));
    const last = this.lastEntries;
    if (last && last.snapshots.length === snapshots.length && last.snapshots.every((s, i) => s === snapshots[i])) return last.entries;
    const entries = snapshots.flatMap((snapshot) => snapshot.entries);
    this.lastEntries = { snapshots, entries };
    return entries;
  }

  /** What went wrong loading each gallery, as of its last load. */
  problems(): GalleryProblem[] {
    return this.sources.flatMap((source) => {
      const snapshot = source.last();
      if (!snapshot) return [];
      const messages = snapshot.failure ? [snapshot.failure, ...snapshot.problems] : snapshot.problems;
      return messages.map((message) => ({ gallery: source.name, message: hidePasswords(message) }));
    });
  }

  async find(qualifiedName: string): Promise<GalleryEntry> {
    const { gallery, name } = this.split(qualifiedName);
    const entry = await this.lookup(name, gallery ? [gallery] : this.sources);
    if (entry) return entry;
    const failure = gallery?.last()?.failure;
    const where = gallery ? `gallery "${gallery.name}"` : 'any gallery';
    throw new HangarError('not-found', `backend "${qualifiedName}": not in ${where}${failure ? ` (${failure})` : ''}`);
  }

  /**
   * A meta backend becomes the concrete build for `capability`, as LocalAI resolves it: the capability's own key,
   * else `default`, else `cpu` (or the key the user `picked`), then the first compatible entry of that name in
   * gallery order. An entry that does not run on this machine is refused, as LocalAI's filtered list omits it.
   */
  async resolve(qualifiedName: string, capability: string, picked?: string | null): Promise<ResolvedEntry> {
    const meta = await this.find(qualifiedName);
    if (!isMeta(meta)) {
      if (!isEntryCompatible(meta, capability)) throw incompatible(qualifiedName, capability);
      return { entry: meta, meta: null, capability };
    }
    const capabilities = meta.capabilities!;
    const own = picked && Object.hasOwn(capabilities, picked) ? capabilities[picked] : undefined;
    const pick = own ? { key: picked!, target: own } : resolveMetaKey(capabilities, capability);
    if (pick === null) {
      throw new HangarError('not-found', `backend "${qualifiedName}": no build for capability "${capability}" and no "default" or "cpu" build`);
    }
    const { key, target } = pick;
    const entry = await this.lookup(target, this.sources);
    if (!entry) throw new HangarError('not-found', `backend "${qualifiedName}": its "${key}" build "${target}" is in no gallery`);
    if (isMeta(entry)) {
      throw new HangarError('failed', `backend "${qualifiedName}": its "${key}" build "${target}" is itself a meta backend`);
    }
    if (!isEntryCompatible(entry, capability)) throw incompatible(`${qualifiedName}" build "${target}`, capability);
    return { entry, meta, capability: key };
  }

  /** The first entry named `name` in gallery order (LocalAI matches names case-insensitively). */
  async byName(name: string): Promise<GalleryEntry | null> {
    return this.lookup(name, this.sources);
  }

  /** Loads every gallery again: local files are re-read, remote indexes fetched. */
  async refresh(): Promise<void> {
    await Promise.all(this.sources.map((source) => source.refresh()));
  }

  close(): void {
    for (const source of this.sources) source.close();
  }

  private split(qualifiedName: string): { gallery: GallerySource | null; name: string } {
    const at = qualifiedName.indexOf('@');
    if (at < 0) return { gallery: null, name: qualifiedName };
    const galleryName = qualifiedName.slice(0, at);
    const gallery = this.sources.find((source) => source.name === galleryName);
    if (!gallery) throw new HangarError('not-found', `backend "${qualifiedName}": no gallery named "${galleryName}"`);
    return { gallery, name: qualifiedName.slice(at + 1) };
  }

  private async lookup(name: string, order: GallerySource[]): Promise<GalleryEntry | null> {
    for (const source of order) {
      const entry = (await source.current()).byName.get(name.toLowerCase());
      if (entry) return entry;
    }
    return null;
  }
}
