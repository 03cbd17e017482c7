// What the node shows of its gallery and its backends: entry views, LocalAI's rows, upgradability, and their events.
import { join } from 'node:path';
import { HangarError } from '../../../shared/errors.ts';
import { followedByName } from '../../../shared/gallery-sources.ts';
import type { BackendView, GalleryEntryView, GalleryProblem, NodeCounts, NodeEvent, ProcessView } from '../../../shared/types.ts';
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
import { hidePasswords } from '../../../shared/url-password.ts';

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

/** Until when a view computed now stays true: the earliest expiry of the tag digests it read (0: do not keep it). */
interface Validity {
  until: number;
}

/** A computed list, kept (it and its items frozen) while it was computed from the same objects and no digest it read has expired. */
class Memo<V extends object[]> {
  private last: { inputs: unknown[]; until: number; value: V } | null = null;

  async get(inputs: unknown[], compute: (validity: Validity) => Promise<V>): Promise<V> {
    const last = this.last;
    if (last && Date.now() < last.until && last.inputs.every((input, i) => input === inputs[i])) return last.value;
    const validity = { until: Infinity };
    const value = await compute(validity);
    for (const item of value) Object.freeze(item);
    Object.freeze(value);
    this.last = { inputs, until: validity.until, value };
    return value;
  }
}

/**
 * Views are made again only when what they show changed: the directory's snapshot, the galleries' entries, the
 * picked builds, the tag digests. Until then a listing hands out the same views (its processes added fresh).
 */
export class Catalog {
  private readonly entryViewsMemo = new Memo<GalleryEntryView[]>();
  private readonly rowViewsMemo = new Memo<BackendView[]>();
  /** The last rows' views by name, and what else they were made from: a row that is the same again keeps its view. */
  private lastRowViews: { inputs: unknown[]; until: number; byName: Map<string, RowView> } | null = null;
  private entryIndexMemo: { entries: GalleryEntry[]; index: EntryIndex } | null = null;

  constructor(private readonly parts: CatalogParts) {}

  /** Views of the gallery's entries, the same array while nothing they show changed. */
  async entryViews(): Promise<GalleryEntryView[]> {
    const { galleries, variantChoices, digests } = this.parts;
    const [entries, snapshot, picks] = await Promise.all([galleries.entries(), this.parts.snapshot(), variantChoices.all()]);
    return this.entryViewsMemo.get([snapshot, entries, picks, digests.generation], (validity) => this.viewsOf(entries, entries, snapshot, picks, validity));
  }

  private viewsOf(chosen: GalleryEntry[], entries: GalleryEntry[], snapshot: DirectorySnapshot, picks: ReadonlyMap<string, string>, validity: Validity): Promise<GalleryEntryView[]> {
    const { byName } = this.entryIndex(entries);
    return Promise.all(chosen.map((entry) => this.entryView(entry, snapshot, byName, picks.get(entry.name.toLowerCase()) ?? null, validity)));
  }

  /** Picks which build of meta backend `name` this node installs (null: the automatic choice again). */
  async chooseVariant(name: string, capability: string | null): Promise<GalleryEntryView> {
    const { galleries, variantChoices } = this.parts;
    const meta = await galleries.find(name);
    if (!isMeta(meta)) throw new HangarError('bad-input', `backend "${name}" is not a meta backend; it has one build`);
    const { byName } = this.entryIndex(await galleries.entries());
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
    const [snapshot, entries, picks] = await Promise.all([this.parts.snapshot(), this.parts.galleries.entries(), this.parts.variantChoices.all()]);
    const { byName } = this.entryIndex(entries);
    const views = await this.rowViewsMemo.get([snapshot, entries, picks, this.parts.digests.generation], (validity) =>
      this.rowViews(snapshot, picks, byName, [entries, picks, this.parts.digests.generation], validity),
    );
    const processes = this.processesByBackend();
    return processes.size === 0 ? views : views.map((view) => (processes.has(view.name) ? { ...view, processes: processes.get(view.name)! } : view));
  }

  /**
   * The view of each row, made again only where the row differs from the last one of its name (a listing after a
   * delete or an install makes a few): a view is a function of its row, its gallery entry and LocalAI's upgrade check.
   */
  private async rowViews(snapshot: DirectorySnapshot, picks: ReadonlyMap<string, string>, byName: Map<string, GalleryEntry>, inputs: unknown[], validity: Validity): Promise<BackendView[]> {
    const last = this.lastRowViews;
    const reusable = last && Date.now() < last.until && last.inputs.every((input, i) => input === inputs[i]) ? last.byName : null;
    if (reusable) validity.until = last!.until;
    const made = snapshot.rows(picks).map((row): RowView | Promise<RowView> => {
      const skip = snapshot.upgradeSkip(row.name);
      const before = reusable?.get(row.name);
      if (before && before.skip === skip && sameRow(before.row, row)) return { row, skip, view: before.view };
      return this.view(row, snapshot, byName.get(row.name.toLowerCase()), [], validity).then((view) => ({ row, skip, view }));
    });
    // Only the views made again are awaited: a listing after one change does not wait on thousands of promises.
    const making = made.flatMap((m, i) => (m instanceof Promise ? [m.then((rowView) => void (made[i] = rowView))] : []));
    if (making.length > 0) await Promise.all(making);
    const rowViews = made as RowView[];
    this.lastRowViews = { inputs, until: validity.until, byName: new Map(rowViews.map((m) => [m.row.name, m])) };
    return rowViews.map((m) => m.view);
  }

  /** What a cluster card counts, from the same views (made again only when something changed). */
  async counts(): Promise<Omit<NodeCounts, 'drift'>> {
    return countsOf(await this.backends());
  }

  /** LocalAI's rule: any version difference, a gallery version over none, else the OCI tag digest. */
  async isUpgradable(backend: InstalledBackend, entry: GalleryEntry, validity: Validity = { until: 0 }): Promise<boolean> {
    // A directory with no metadata.json is, to LocalAI, a backend of that name with no version and no digest.
    const md = backend.metadata;
    const installed = { version: md?.version ?? null, digest: md?.digest ?? null, meta: Boolean(md?.metaBackendFor) };
    return upgradeOffered(installed, entry, (uri) => ociSource.matches(uri), async (uri) => {
      const remote = await this.remoteDigest(uri);
      validity.until = Math.min(validity.until, this.parts.digests.keptUntil(uri));
      return remote;
    });
  }

  galleryUrl(entry: GalleryEntry): string | null {
    return this.parts.galleries.galleryUrlOf(entry.gallery);
  }

  /**
   * Publishes the row of `name` and every row a change of it can alter: the names LocalAI runs it for (its alias, a
   * meta naming it) now, and `before`, the names it was listed under before the change.
   */
  async publishBackend(name: string, before: string[] = []): Promise<void> {
    const [snapshot, entries, picks] = await Promise.all([this.parts.snapshot(), this.entriesByName(), this.parts.variantChoices.all()]);
    const keys = new Set([name, ...before, ...snapshot.keysRunning(name)]);
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

  private async entryView(
    entry: GalleryEntry,
    snapshot: DirectorySnapshot,
    byName: Map<string, GalleryEntry>,
    picked: string | null,
    validity: Validity = { until: 0 },
  ): Promise<GalleryEntryView> {
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
      upgradable: backend ? (await this.isUpgradable(backend, entry, validity)) && snapshot.upgradeSkip(backend.name) === null : false,
      compatible: isEntryCompatible(entry, capability),
      meta,
    };
  }

  /** `processes` are the row's own. */
  private async view(row: Row, snapshot: DirectorySnapshot, entry: GalleryEntry | undefined, processes: ProcessView[], validity: Validity = { until: 0 }): Promise<BackendView> {
    const managed = row.kind === 'backend' ? row.backend : null;
    const md = row.backend?.metadata ?? row.kept?.metadata ?? null;
    const notes = [...row.localai];
    let upgradable = managed !== null && entry !== undefined && (await this.isUpgradable(managed, entry, validity));
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
      uri: md?.uri ? hidePasswords(md.uri) : null,
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
    return this.entryIndex(await this.parts.galleries.entries()).byName;
  }

  private entryIndex(entries: GalleryEntry[]): EntryIndex {
    if (this.entryIndexMemo?.entries !== entries) this.entryIndexMemo = { entries, index: indexEntries(entries) };
    return this.entryIndexMemo.index;
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
  private async galleryEntriesAbout(name: string, snapshot: DirectorySnapshot): Promise<GalleryEntryView[]> {
    const [entries, picks] = await Promise.all([this.parts.galleries.entries(), this.parts.variantChoices.all()]);
    const index = this.entryIndex(entries);
    const lower = name.toLowerCase();
    const own = index.all.get(lower) ?? [];
    const installed = snapshot.directory(name);
    const alias = own[0]?.alias ?? (installed?.kind === 'backend' ? installed.metadata?.alias : null) ?? null;
    const aliasMetas = alias === null ? [] : (index.all.get(alias.toLowerCase()) ?? []).filter((e) => isMeta(e) && e.name === alias);
    const chosen = [...new Set([...own, ...(index.metasByBuild.get(lower) ?? []), ...aliasMetas])].sort((a, b) => index.order.get(a)! - index.order.get(b)!);
    return this.viewsOf(chosen, entries, snapshot, picks, { until: 0 });
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

interface RowView {
  row: Row;
  skip: string | null;
  view: BackendView;
}

/**
 * Rows that show the same: the same directory (its entry is the same object while the directory is unchanged), the same
 * kept tree, the same notes.
 */
function sameRow(a: Row, b: Row): boolean {
  return (
    a.kind === b.kind &&
    a.backend === b.backend &&
    a.kept === b.kept &&
    a.runs === b.runs &&
    a.broken === b.broken &&
    a.leftover?.restorable === b.leftover?.restorable &&
    a.localai.length === b.localai.length &&
    a.localai.every((note, i) => note === b.localai[i])
  );
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

/** What a node card counts of a node's backends (a cluster card adds the drift). */
export function countsOf(backends: BackendView[]): Omit<NodeCounts, 'drift'> {
  const processes = backends.flatMap((b) => b.processes);
  return {
    backends: backends.filter((b) => b.kind === 'backend').length,
    processes: processes.length,
    stale: processes.filter((p) => p.cwd === 'stale').length,
    upgradable: backends.filter((b) => b.upgradable).length,
  };
}

/** The galleries' entries by lower-cased name (LocalAI matches names case-insensitively). */
interface EntryIndex {
  /** The entry a node follows for each name: the first in gallery order. */
  byName: Map<string, GalleryEntry>;
  /** Every entry of each name. */
  all: Map<string, GalleryEntry[]>;
  /** The meta entries naming each build. */
  metasByBuild: Map<string, GalleryEntry[]>;
  /** Each entry's place in gallery order. */
  order: Map<GalleryEntry, number>;
}

function indexEntries(entries: GalleryEntry[]): EntryIndex {
  const index: EntryIndex = { byName: followedByName(entries), all: new Map(), metasByBuild: new Map(), order: new Map() };
  const add = (map: Map<string, GalleryEntry[]>, key: string, entry: GalleryEntry) => {
    const list = map.get(key);
    if (list) list.push(entry);
    else map.set(key, [entry]);
  };
  entries.forEach((entry, i) => {
    const lower = entry.name.toLowerCase();
    add(index.all, lower, entry);
    if (isMeta(entry)) for (const build of new Set(Object.values(entry.capabilities ?? {}).map((b) => b.toLowerCase()))) add(index.metasByBuild, build, entry);
    index.order.set(entry, i);
  });
  return index;
}
