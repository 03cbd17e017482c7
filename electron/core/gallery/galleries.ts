// Several galleries at once, in order. Names are `name` (first gallery that lists it) or `gallery@name`.
import { EventEmitter } from 'node:events';
import { HangarError } from '../../../shared/errors.ts';
import { FileGallery } from './file-gallery.ts';
import { galleryNames, parseLocation } from './location.ts';
import { isMeta, resolveMetaKey } from './meta.ts';
import type { GallerySource } from './snapshot.ts';
import type { GalleryEntry, GalleryLoadError, GallerySpec } from './types.ts';
import { UrlGallery } from './url-gallery.ts';

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
  private readonly sources: GallerySource[];

  constructor(opts: { specs: GallerySpec[]; fetch?: typeof fetch }) {
    super();
    const locations = opts.specs.map((spec) => parseLocation(spec.location));
    const names = galleryNames(opts.specs, locations);
    const fetchImpl = opts.fetch ?? globalThis.fetch;
    const changed = (gallery: string) => this.emit('changed', gallery);
    this.sources = locations.map((location, index) =>
      location.kind === 'file'
        ? new FileGallery(names[index]!, location.path, changed)
        : new UrlGallery(names[index]!, location.url, fetchImpl, changed),
    );
  }

  names(): string[] {
    return this.sources.map((source) => source.name);
  }

  /** Every entry of every gallery, galleries in order; a gallery that failed to load contributes what it still has. */
  async entries(): Promise<GalleryEntry[]> {
    const snapshots = await Promise.all(this.sources.map((source) => source.current()));
    return snapshots.flatMap((snapshot) => snapshot.entries);
  }

  errors(): GalleryLoadError[] {
    return this.sources.flatMap((source) => {
      const snapshot = source.last();
      if (!snapshot) return [];
      const messages = snapshot.failure ? [snapshot.failure, ...snapshot.problems] : snapshot.problems;
      return messages.map((message) => ({ gallery: source.name, message }));
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

  /** A meta backend becomes the concrete build for `capability`, looked up in its own gallery first. */
  async resolve(qualifiedName: string, capability: string): Promise<ResolvedEntry> {
    const meta = await this.find(qualifiedName);
    if (!isMeta(meta)) return { entry: meta, meta: null, capability };
    const pick = resolveMetaKey(meta.capabilities!, capability);
    if (!pick) {
      throw new HangarError('not-found', `backend "${qualifiedName}": no build for capability "${capability}" and no "default" build`);
    }
    const own = this.sources.find((source) => source.name === meta.gallery);
    const order = own ? [own, ...this.sources.filter((source) => source !== own)] : this.sources;
    const entry = await this.lookup(pick.target, order);
    if (!entry) {
      throw new HangarError('not-found', `backend "${qualifiedName}": its "${pick.key}" build "${pick.target}" is in no gallery`);
    }
    if (isMeta(entry)) {
      throw new HangarError('failed', `backend "${qualifiedName}": its "${pick.key}" build "${pick.target}" is itself a meta backend`);
    }
    return { entry, meta, capability: pick.key };
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
