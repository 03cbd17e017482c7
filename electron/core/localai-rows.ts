// The rows of the backends listing, and what each name starts, read the way LocalAI reads the same directory: a
// backend Hangar manages is a row; so is every name only LocalAI lists (an alias, a meta directory's own name, a
// directory of a name Hangar does not manage), every working directory LocalAI left behind, and every rollback tree
// whose backend was deleted outside Hangar. Each row says where LocalAI does something the row alone would not say.
import { HangarError } from '../../shared/errors.ts';
import type { BackendKind, LeftoverView } from '../../shared/types.ts';
import { describeCapability } from './gallery/variants.ts';
import { keysRunning, localaiListing, updatedListing, upgradeCheckSkip, type LocalAiBackend, type LocalAiListing } from './gallery/localai-listing.ts';
import type { Directories } from './install/directory-index.ts';
import { isBackup, leftoverOf, type BackendStore, type InstalledBackend, type KeptTree } from './install/store.ts';
import type { PersistentMap } from './persistent-map.ts';

export interface Row {
  name: string;
  kind: BackendKind;
  /** The directory of that name, when there is one. */
  backend: InstalledBackend | null;
  /** The directory LocalAI (and `load NAME`) starts for this name; null when LocalAI does not list the name. */
  runs: string | null;
  /** Why the row cannot be started, when the directory itself is fine but what LocalAI runs for it is not. */
  broken: string | null;
  localai: string[];
  leftover: LeftoverView | null;
  kept: KeptTree | null;
}

/**
 * One read of the backends directory: every directory, the kept trees, and LocalAI's listing of them. The next one is
 * made from it, where LocalAI's listing allows, by listing again only the directories that changed.
 */
export class DirectorySnapshot {
  private lastRows: { picks: ReadonlyMap<string, string>; rows: Row[] } | null = null;

  private constructor(
    /** The store's version of the directories read. */
    readonly version: number,
    private readonly byDir: PersistentMap<string, InstalledBackend>,
    readonly kept: KeptTree[],
    readonly listing: LocalAiListing,
    readonly capability: string,
  ) {}

  static async read(store: BackendStore, capability: string): Promise<DirectorySnapshot> {
    const [directories, kept] = await Promise.all([store.directories(), store.kept()]);
    return DirectorySnapshot.of(store, directories, kept, capability);
  }

  /** From `previous`, when given, only what changed since it is listed again where LocalAI's listing allows it. */
  static of(store: BackendStore, directories: Directories<InstalledBackend>, kept: KeptTree[], capability: string, previous?: DirectorySnapshot): DirectorySnapshot {
    const all = directories.byName;
    const listing =
      (previous && previous.capability === capability && previous.listingAfter(directories)) ||
      localaiListing([...all.values()].map((b) => b.facts), capability, (dir) => store.runShOf(dir));
    return new DirectorySnapshot(directories.version, all, kept, listing, capability);
  }

  /** This snapshot's listing brought up to `directories`, from the directories that changed between them. */
  private listingAfter(directories: Directories<InstalledBackend>): LocalAiListing | null {
    const changed = directories.changedSince(this.version);
    if (changed === null) return null;
    return updatedListing(
      this.listing,
      changed.map((dir) => ({ dir, before: this.byDir.get(dir)?.facts, now: directories.byName.get(dir)?.facts })),
    );
  }

  /** The managed meta directories whose build is `name`. */
  metasOf(name: string): InstalledBackend[] {
    const dirs = this.listing.references.get(name) ?? [];
    return dirs.flatMap((dir) => {
      const backend = this.directory(dir);
      return backend?.kind === 'backend' && backend.metadata?.metaBackendFor === name ? [backend] : [];
    });
  }

  /** The keys LocalAI starts directory `name` for, or lists it in the alias group of. */
  keysRunning(name: string): string[] {
    return keysRunning(this.listing, name);
  }

  directory(name: string): InstalledBackend | null {
    return this.byDir.get(name) ?? null;
  }

  /** The managed directory `load NAME` starts, exactly LocalAI's pick; throws why when there is none that runs. */
  target(name: string): { name: string; dir: string } {
    const row = this.row(name);
    if (!row) throw new HangarError('not-found', `backend ${name} is not installed`);
    const broken = row.backend?.broken ?? row.broken;
    if (broken) throw new HangarError('bad-input', `backend ${name} is broken: ${broken}`);
    if (row.runs === null) throw new HangarError('not-found', `backend ${name} is not installed as LocalAI lists backends: it runs nothing`);
    const runs = this.directory(row.runs);
    if (!runs) throw new HangarError('not-found', `backend ${name} runs ${row.runs}, which is not installed`);
    if (runs.kind !== 'backend') throw new HangarError('bad-input', `LocalAI runs ${runs.name} for ${name}, a directory Hangar does not start: ${this.rowKindReason(runs)}`);
    if (runs.broken) throw new HangarError('bad-input', `backend ${name} runs ${runs.name}, which is broken: ${runs.broken}`);
    return { name: runs.name, dir: runs.dir };
  }

  /** Why LocalAI's upgrade check passes `name` by, or null when it checks it. */
  upgradeSkip(name: string): string | null {
    return upgradeCheckSkip(this.listing, name);
  }

  /** The rows, the same array for the same picks. */
  rows(picks: ReadonlyMap<string, string> = new Map()): Row[] {
    if (this.lastRows?.picks !== picks) this.lastRows = { picks, rows: this.readRows(picks) };
    return this.lastRows.rows;
  }

  private readRows(picks: ReadonlyMap<string, string>): Row[] {
    const names = new Set<string>();
    for (const b of this.byDir.values()) if (b.kind !== 'foreign' || this.listing.backends.has(b.name)) names.add(b.name);
    for (const key of this.listing.backends.keys()) names.add(key);
    for (const k of this.kept) names.add(k.name);
    return [...names].sort().map((name) => this.row(name, picks)!);
  }

  row(name: string, picks: ReadonlyMap<string, string> = new Map()): Row | null {
    const backend = this.directory(name);
    const localai = this.listing.backends.get(name) ?? null;
    const kept = this.kept.find((k) => k.name === name) ?? null;
    if (!backend && !localai && !kept) return null;
    if (backend?.kind === 'foreign' && !localai) return null;
    const kind: BackendKind = backend ? (backend.kind === 'backend' ? 'backend' : backend.kind) : localai ? 'alias' : 'kept';
    const notes: string[] = [];
    let broken: string | null = null;
    if (localai) {
      notes.push(...this.runsNotes(name, backend, localai, picks.get(name.toLowerCase()) ?? null));
      const target = localai.runs === name ? null : this.directory(localai.runs);
      if (!localai.runnable || target?.broken) broken = this.notRunnable(localai);
    }
    if (backend) notes.push(...this.directoryNotes(backend, localai));
    if (kept) notes.push(`Kept from a deleted backend: ${name} is no longer installed, and this tree of it stays until ${kept.expiresAt.slice(0, 10)}`);
    const leftover = backend?.kind === 'leftover' ? this.leftoverView(backend) : null;
    return { name, kind, backend, runs: localai?.runs ?? null, broken, localai: notes, leftover, kept };
  }

  /** What LocalAI runs for `name`, where that is not what the row points at. */
  private runsNotes(name: string, backend: InstalledBackend | null, localai: LocalAiBackend, picked: string | null): string[] {
    const meta = backend?.metadata?.metaBackendFor ?? null;
    const own = meta ?? (backend && backend.facts.runSh !== 'missing' ? backend.name : null);
    if (localai.via === 'directory' || localai.runs === own) return [];
    if (localai.via === 'meta') return [`LocalAI lists this meta backend as ${name} (the name in ${localai.from}/metadata.json) and runs ${localai.runs}`];
    const instead = own === null ? '' : `, not ${own}${meta && picked ? ` (the ${picked} build picked here)` : ''}`;
    const because =
      localai.group.length === 1
        ? `${name} is the alias of ${localai.runs}`
        : `${name} is the alias of ${namesText(localai.group)}, and LocalAI prefers ${localai.runs} on this machine (${this.capabilityText()})`;
    const rule = meta ? "; an alias wins over a meta backend's own build" : backend ? '; an alias wins over a directory of the same name' : '';
    return [`LocalAI runs ${localai.runs} for ${name}${instead}: ${because}${rule}`];
  }

  /** What LocalAI does with the directory itself. */
  private directoryNotes(backend: InstalledBackend, localai: LocalAiBackend | null): string[] {
    const notes: string[] = [];
    if (backend.facts.error !== null) notes.push('LocalAI lists no backend at all while this metadata.json cannot be read');
    const listedAs = backend.facts.metadata?.metaBackendFor ? backend.facts.metadata.name : backend.name;
    if (listedAs !== backend.name) notes.push(`LocalAI lists this meta backend as ${JSON.stringify(listedAs)} (the name in its metadata.json), not as ${backend.name}`);
    if (backend.madeRunnableOnStart) notes.push('run.sh has no execute bit: it is made 0700 when it starts, as LocalAI does');
    if (backend.kind === 'foreign') notes.push(`LocalAI runs this directory as "${backend.name}"; Hangar manages only names of letters, digits, ".", "_", "+" and "-"`);
    if (backend.kind === 'leftover') notes.push(...this.leftoverNotes(backend, localai));
    return notes;
  }

  private leftoverNotes(backend: InstalledBackend, localai: LocalAiBackend | null): string[] {
    const leftover = leftoverOf(backend.name)!;
    if (leftover.suffix === '.previous') return [`Left by Hangar 0.1: a rollback tree of ${leftover.of}`];
    const verb = leftover.suffix.startsWith('.install') ? 'install' : 'upgrade';
    const what = isBackup(leftover) ? `${leftover.of} as it was before, set aside` : `its download of ${leftover.of}, perhaps partial`;
    const notes = [`Left by an interrupted LocalAI ${verb}: ${what}`];
    if (localai) notes.push(`LocalAI lists it as a backend named ${backend.name}`);
    notes.push(`LocalAI's next ${verb} of ${leftover.of} deletes it first`);
    if (this.leftoverView(backend).restorable) notes.push(`${leftover.of} is gone: Restore puts this tree back as ${leftover.of}`);
    return notes;
  }

  private leftoverView(backend: InstalledBackend): LeftoverView {
    const leftover = leftoverOf(backend.name)!;
    return { of: leftover.of, suffix: leftover.suffix, restorable: isBackup(leftover) && !this.byDir.has(leftover.of) };
  }

  /** Why what LocalAI runs for a name cannot start. */
  private notRunnable(localai: LocalAiBackend): string {
    const build = this.directory(localai.runs);
    const why = !build ? `${localai.runs} is not installed` : build.broken ? `${build.name} is broken: ${build.broken}` : `${build.name} has no run.sh`;
    return localai.via === 'meta' ? `its build ${why}` : `LocalAI runs ${localai.runs} for it, and ${why}`;
  }

  private rowKindReason(backend: InstalledBackend): string {
    return backend.kind === 'leftover' ? 'a working directory LocalAI left behind' : 'a name Hangar does not manage';
  }

  private capabilityText(): string {
    return this.capability.trim() === '' ? `capability ${JSON.stringify(this.capability)}, CPU builds` : `${this.capability}: ${describeCapability(this.capability)}`;
  }
}

/** The last snapshot, made again only when the store's directories or its kept trees changed, from the one before. */
export class Snapshots {
  private last: DirectorySnapshot | null = null;

  constructor(
    private readonly store: BackendStore,
    private readonly capability: string,
  ) {}

  async current(): Promise<DirectorySnapshot> {
    const [directories, kept] = await Promise.all([this.store.directories(), this.store.kept()]);
    const last = this.last;
    if (last?.version === directories.version && last.kept === kept) return last;
    const snapshot = DirectorySnapshot.of(this.store, directories, kept, this.capability, last ?? undefined);
    // A call that read before another one finished keeps the newer snapshot as the last.
    if (!last || snapshot.version >= last.version) this.last = snapshot;
    return snapshot;
  }
}

/** A note names at most this many backends: past it, the first and how many others ("b1 and 3,999 others"). */
const NAMES_IN_A_NOTE = 3;

function namesText(names: readonly string[]): string {
  if (names.length <= NAMES_IN_A_NOTE) return names.join(' and ');
  return `${names[0]} and ${(names.length - 1).toLocaleString('en-US')} others`;
}
