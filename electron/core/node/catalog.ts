// What the node shows of its gallery and its backends: entry views, LocalAI's rows, upgradability, and their events.
import { join } from 'node:path';
import { HangarError } from '../../../shared/errors.ts';
import { followedByName } from '../../../shared/gallery-sources.ts';
import type { BackendView, GalleryEntryView, GalleryProblem, NodeEvent, ProcessView } from '../../../shared/types.ts';
import {
  entryFacts,
  isEntryCompatible,
  isMeta,
  metaResolution,
  upgradeOffered,
  versionVerdict,
  type Galleries,
  type GalleryEntry,
  type VariantChoices,
} from '../gallery/index.ts';
import { ociSource, type DigestResolver } from '../install/oci/index.ts';
import type { InstalledBackend } from '../install/store.ts';
import type { DirectorySnapshot, Row } from '../localai-rows.ts';

export interface CatalogParts {
  node: string;
  capability: string;
  backendsDir: string;
  galleries: Galleries;
  variantChoices: VariantChoices;
  digests: DigestResolver;
  /** One read of the backends directory, and LocalAI's listing of it. */
  snapshot(): Promise<DirectorySnapshot>;
  /** Every process the node supervises. */
  processes(): ProcessView[];
  emit(event: NodeEvent): void;
}

export class Catalog {
  constructor(private readonly parts: CatalogParts) {}

  /** Views of the gallery's entries, or of those `choose` picks once it has seen the entries and what is installed. */
  async entryViews(
    choose?: (entries: GalleryEntry[], installed: InstalledBackend[]) => (entry: GalleryEntry) => boolean,
    read?: DirectorySnapshot,
  ): Promise<GalleryEntryView[]> {
    const { galleries, variantChoices } = this.parts;
    const [entries, snapshot, picks] = await Promise.all([galleries.entries(), read ?? this.parts.snapshot(), variantChoices.all()]);
    const byName = followedByName(entries);
    const chosen = choose ? entries.filter(choose(entries, snapshot.managed())) : entries;
    return Promise.all(chosen.map((entry) => this.entryView(entry, snapshot, byName, picks.get(entry.name.toLowerCase()) ?? null)));
  }

  /** Picks which build of meta backend `name` this node installs (null: the automatic choice again). */
  async chooseVariant(name: string, capability: string | null): Promise<GalleryEntryView> {
    const { galleries, variantChoices } = this.parts;
    const meta = await galleries.find(name);
    if (!isMeta(meta)) throw new HangarError('bad-input', `backend "${name}" is not a meta backend; it has one build`);
    const entries = await galleries.entries();
    const byName = followedByName(entries);
    if (capability !== null) {
      const backend = meta.capabilities![capability];
      if (!backend) throw new HangarError('bad-input', `backend "${name}" has no "${capability}" build`);
      const target = byName.get(backend.toLowerCase());
      if (!target || !isEntryCompatible(target, this.parts.capability)) {
        throw new HangarError('bad-input', `the "${capability}" build of ${meta.name} (${backend}) does not run on this machine (${this.parts.capability})`);
      }
    }
    await variantChoices.set(meta.name, capability);
    this.parts.emit({ type: 'gallery-changed', node: this.parts.node, problems: galleries.problems() });
    return this.entryView(meta, await this.parts.snapshot(), byName, capability);
  }

  async backends(): Promise<BackendView[]> {
    const [snapshot, entries, picks] = await Promise.all([this.parts.snapshot(), this.entriesByName(), this.parts.variantChoices.all()]);
    const processes = this.processesByBackend();
    return Promise.all(snapshot.rows(picks).map((row) => this.view(row, snapshot, entries.get(row.name.toLowerCase()), processes.get(row.name) ?? [])));
  }

  /** LocalAI's rule: any version difference, a gallery version over none, else the OCI tag digest. */
  async isUpgradable(backend: InstalledBackend, entry: GalleryEntry): Promise<boolean> {
    // A directory with no metadata.json is, to LocalAI, a backend of that name with no version and no digest.
    const md = backend.metadata;
    const installed = { version: md?.version ?? null, digest: md?.digest ?? null, meta: Boolean(md?.metaBackendFor) };
    return upgradeOffered(installed, entry, (uri) => ociSource.matches(uri), (uri) => this.remoteDigest(uri));
  }

  galleryLocation(entry: GalleryEntry): string | null {
    return this.parts.galleries.locationOf(entry.gallery);
  }

  /**
   * Publishes the row of `name` and every row a change of it can alter: the names LocalAI runs it for (its alias, a
   * meta naming it) now, and `before`, the names it was listed under before the change.
   */
  async publishBackend(name: string, before: string[] = []): Promise<void> {
    const [snapshot, entries, picks] = await Promise.all([this.parts.snapshot(), this.entriesByName(), this.parts.variantChoices.all()]);
    const keys = new Set([name, ...before]);
    for (const b of snapshot.listing.backends.values()) if (b.runs === name || b.group.includes(name)) keys.add(b.key);
    await this.publishRows([...keys], snapshot, entries, picks);
    const about = await this.galleryEntriesAbout(name, snapshot);
    if (about.length > 0) this.parts.emit({ type: 'gallery-entries', node: this.parts.node, entries: about });
  }

  /** Publishes every row (the gallery changed under them). */
  async publishAll(): Promise<void> {
    const [snapshot, entries, picks] = await Promise.all([this.parts.snapshot(), this.entriesByName(), this.parts.variantChoices.all()]);
    await this.publishRows(snapshot.rows(picks).map((row) => row.name), snapshot, entries, picks);
  }

  /** Loads every gallery first, so the first answer already says which could not be read. */
  async galleryProblems(): Promise<GalleryProblem[]> {
    await this.parts.galleries.entries();
    return this.parts.galleries.problems();
  }

  private async entryView(entry: GalleryEntry, snapshot: DirectorySnapshot, byName: Map<string, GalleryEntry>, picked: string | null): Promise<GalleryEntryView> {
    const { capability } = this.parts;
    // The entry the node follows (the first gallery that lists the name) is the one installed or upgradable; an
    // entry of another gallery with that name is another source of it.
    const follows = byName.get(entry.name.toLowerCase()) === entry;
    const directory = follows ? snapshot.directory(entry.name) : undefined;
    const backend = directory?.kind === 'backend' ? directory : null;
    const meta = isMeta(entry)
      ? metaResolution({
          meta: entry,
          capability,
          picked,
          byName: (name) => byName.get(name.toLowerCase()) ?? null,
          installedAs: installedBuildOf(entry, snapshot),
        })
      : null;
    return {
      ...entryFacts(entry),
      installed: follows && (backend !== null || (meta?.installedAs ?? null) !== null),
      upgradable: backend ? (await this.isUpgradable(backend, entry)) && snapshot.upgradeSkip(backend.name) === null : false,
      compatible: isEntryCompatible(entry, capability),
      meta,
    };
  }

  /** `processes` are the row's own. */
  private async view(row: Row, snapshot: DirectorySnapshot, entry: GalleryEntry | undefined, processes: ProcessView[]): Promise<BackendView> {
    const managed = row.kind === 'backend' ? row.backend : null;
    const md = row.backend?.metadata ?? row.kept?.metadata ?? null;
    const notes = [...row.localai];
    let upgradable = managed !== null && entry !== undefined && (await this.isUpgradable(managed, entry));
    const skip = upgradable ? snapshot.upgradeSkip(row.name) : null;
    if (skip) {
      upgradable = false;
      notes.push(`No upgrade offered, as in LocalAI: ${skip}`);
    }
    const uri = entry?.uri ?? md?.uri ?? null;
    if (managed && uri?.startsWith('oci://') && versionVerdict(md?.version ?? null, entry?.version ?? null) === 'digest') {
      notes.push("LocalAI records no digest for an oci:// uri and never offers its upgrade; Hangar compares the image's digest");
    }
    const kept = row.kept && { since: row.kept.since, expiresAt: row.kept.expiresAt, bytes: row.kept.bytes };
    return {
      name: row.name,
      kind: row.kind,
      runs: row.runs,
      localai: notes,
      leftover: row.leftover,
      kept,
      alias: md?.alias ?? null,
      version: md?.version ?? null,
      digest: md?.digest ?? null,
      sha256: md?.sha256 ?? null,
      uri: md?.uri ?? null,
      gallery: managed ? (entry?.gallery ?? null) : null,
      dir: row.backend?.dir ?? row.kept?.dir ?? join(this.parts.backendsDir, row.runs ?? row.name),
      installedAt: md?.installedAt ?? null,
      metaBackendFor: md?.metaBackendFor ?? null,
      upgradable,
      availableVersion: upgradable ? (entry?.version ?? null) : null,
      previous: managed?.previous ? { version: managed.previous.version, installedAt: managed.previous.installedAt } : null,
      broken: row.backend?.broken ?? row.broken,
      processes,
    };
  }

  private async remoteDigest(uri: string): Promise<string | null> {
    try {
      return await this.parts.digests.current(uri);
    } catch {
      return null;
    }
  }

  private async entriesByName(): Promise<Map<string, GalleryEntry>> {
    return followedByName(await this.parts.galleries.entries());
  }

  private async publishRows(keys: string[], snapshot: DirectorySnapshot, entries: Map<string, GalleryEntry>, picks: ReadonlyMap<string, string>): Promise<void> {
    const { node, emit } = this.parts;
    const processes = this.processesByBackend();
    for (const key of keys) {
      const row = snapshot.row(key, picks);
      if (row) emit({ type: 'backend', node, backend: await this.view(row, snapshot, entries.get(key.toLowerCase()), processes.get(key) ?? []) });
      else emit({ type: 'backend-removed', node, name: key });
    }
  }

  /** The entries a change of backend `name` can alter: its own, and the metas that name it or its alias group. */
  private galleryEntriesAbout(name: string, snapshot: DirectorySnapshot): Promise<GalleryEntryView[]> {
    const same = (other: string | null | undefined) => other?.toLowerCase() === name.toLowerCase();
    return this.entryViews((entries, installed) => {
      const alias = entries.find((e) => same(e.name))?.alias ?? installed.find((b) => same(b.name))?.metadata?.alias ?? null;
      return (e) => same(e.name) || (isMeta(e) && (Object.values(e.capabilities ?? {}).some(same) || (alias !== null && e.name === alias)));
    }, snapshot);
  }

  private processesByBackend(): Map<string, ProcessView[]> {
    const byBackend = new Map<string, ProcessView[]>();
    for (const process of this.parts.processes()) {
      const list = byBackend.get(process.backend);
      if (list) list.push(process);
      else byBackend.set(process.backend, [process]);
    }
    return byBackend;
  }
}

/** The names LocalAI listed a directory under besides its own: its alias, and a meta's own name. */
export function keysOf(backend: InstalledBackend | null): string[] {
  return [backend?.metadata?.alias, backend?.facts.metadata?.name].filter((k): k is string => !!k);
}

/** The build LocalAI runs for a meta's name here (its own build, or its alias group's pick), when that is installed. */
function installedBuildOf(meta: GalleryEntry, snapshot: DirectorySnapshot): string | null {
  const runs = snapshot.listing.backends.get(meta.name)?.runs ?? null;
  return runs !== null && snapshot.directory(runs)?.kind === 'backend' ? runs : null;
}
