// The backends directory as LocalAI lists it (core/gallery/backends.go ListSystemBackends), restated over one read of
// it. Every directory counts, whatever its name; one with run.sh is a backend of its own name; a meta directory adds
// the name in its metadata, pointing at its build; then each alias group adds (and overwrites) the alias, pointing at
// the build LocalAI prefers on this machine. LocalAI starts the key's run.sh (pkg/model RegisterBackends), so this is
// what `load NAME` must start too.
import { PersistentMap } from '../persistent-map.ts';
import { preferredBuild } from './meta.ts';

export type RunShState = 'file' | 'directory' | 'missing';

/** What LocalAI reads of one directory of the backends directory. */
export interface DirectoryFacts {
  dir: string;
  /** `os.Stat(dir/run.sh)`: LocalAI lists a directory named run.sh too, but cannot run it. */
  runSh: RunShState;
  /** metadata.json as LocalAI reads it: null when the file is missing (LocalAI then uses the directory's name). */
  metadata: { name: string; alias: string; metaBackendFor: string } | null;
  /** Why LocalAI cannot read metadata.json: such a file makes LocalAI's whole listing fail. */
  error: string | null;
}

export type LocalAiVia = 'directory' | 'meta' | 'alias';

export interface LocalAiBackend {
  key: string;
  /** The directory whose run.sh LocalAI starts for this key. */
  runs: string;
  via: LocalAiVia;
  /** The directory whose metadata the key carries: its own, the meta's, or the chosen build's. */
  from: string;
  /** The metadata name the key carries (LocalAI's Metadata.Name). */
  name: string;
  /** For an alias: every directory of the group, in LocalAI's order. */
  group: string[];
  /** What LocalAI's isBackendRunnable says: run.sh is there and is not a directory. */
  runnable: boolean;
}

export interface LocalAiListing {
  /** LocalAI's own error: while any metadata.json cannot be read, LocalAI lists (and so runs) no backend at all. */
  error: string | null;
  backends: PersistentMap<string, LocalAiBackend>;
  /** The metadata names of the keys, each with how many keys carry it (what LocalAI's upgrade check calls installed). */
  names: PersistentMap<string, number>;
  /** Each name a directory's metadata gives as a meta's name, a meta's build or an alias, with those directories. */
  references: ReadonlyMap<string, string[]>;
  /** Each directory some meta or alias key runs or groups, with those keys. */
  dependents: ReadonlyMap<string, string[]>;
}

/** One directory before and after a change (undefined: not there). */
export interface DirectoryChange {
  dir: string;
  before: DirectoryFacts | undefined;
  now: DirectoryFacts | undefined;
}

export const DEVELOPMENT_SUFFIX = '-development';

/** Go's os.ReadDir order: by the names' bytes (for ASCII names, JavaScript's own string order). */
function inReadDirOrder(directories: DirectoryFacts[]): DirectoryFacts[] {
  // eslint-disable-next-line no-control-regex
  if (directories.every((d) => /^[\x00-\x7f]*$/.test(d.dir))) return [...directories].sort((a, b) => (a.dir < b.dir ? -1 : a.dir > b.dir ? 1 : 0));
  return directories
    .map((d) => ({ d, bytes: Buffer.from(d.dir) }))
    .sort((a, b) => Buffer.compare(a.bytes, b.bytes))
    .map(({ d }) => d);
}

/**
 * LocalAI's listing of `directories` on a machine of `capability`. `runShOf` answers for a meta's build that is not
 * among them (LocalAI stats that path whatever it is). Directories LocalAI could not read are left out, and the
 * listing's `error` says LocalAI would list nothing.
 */
export function localaiListing(directories: DirectoryFacts[], capability: string, runShOf: (dir: string) => RunShState = () => 'missing'): LocalAiListing {
  const sorted = inReadDirOrder(directories);
  const facts = new Map(sorted.map((d) => [d.dir, d]));
  const runSh = (dir: string) => facts.get(dir)?.runSh ?? runShOf(dir);
  const backends = new Map<string, LocalAiBackend>();
  const groups = new Map<string, string[]>();
  const put = (key: string, runs: string, via: LocalAiVia, from: string, name: string, group: string[] = []) =>
    backends.set(key, { key, runs, via, from, name, group, runnable: runSh(runs) === 'file' });
  let error: string | null = null;
  for (const d of sorted) {
    if (d.error !== null) {
      error ??= `${d.dir}/metadata.json: ${d.error}`;
      continue;
    }
    const md = metadataOf(d);
    const own = ownEntry(d);
    if (own) backends.set(d.dir, own);
    if (md.alias) groups.set(md.alias, [...(groups.get(md.alias) ?? []), d.dir]);
    if (md.metaBackendFor) put(md.name, md.metaBackendFor, 'meta', d.dir, md.name);
  }
  for (const [alias, group] of groups) {
    const chosen = preferredBuild(group, capability)!;
    put(alias, chosen, 'alias', chosen, facts.get(chosen)?.metadata?.name ?? chosen, group);
  }
  return { error, backends: PersistentMap.adopt(backends), names: PersistentMap.adopt(namesOf(backends.values())), references: referencesOf(sorted), dependents: dependentsOf(backends.values()) };
}

function addTo(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key);
  if (!list) map.set(key, [value]);
  else if (!list.includes(value)) list.push(value);
}

function referencesOf(directories: DirectoryFacts[]): Map<string, string[]> {
  const references = new Map<string, string[]>();
  for (const d of directories) {
    const md = d.metadata;
    if (md?.metaBackendFor) {
      addTo(references, md.name, d.dir);
      addTo(references, md.metaBackendFor, d.dir);
    }
    if (md?.alias) addTo(references, md.alias, d.dir);
  }
  return references;
}

function dependentsOf(backends: Iterable<LocalAiBackend>): Map<string, string[]> {
  const dependents = new Map<string, string[]>();
  for (const b of backends) {
    if (b.via === 'directory') continue;
    for (const dir of [b.runs, ...b.group]) addTo(dependents, dir, b.key);
  }
  return dependents;
}

/** The keys LocalAI starts `dir` for or lists it in the alias group of: its own name, and metas' and aliases'. */
export function keysRunning(listing: LocalAiListing, dir: string): string[] {
  const own = listing.backends.get(dir)?.runs === dir ? [dir] : [];
  return [...new Set([...own, ...(listing.dependents.get(dir) ?? [])])];
}

/** The metadata LocalAI reads of a directory: its own name when it has no metadata.json. */
function metadataOf(d: DirectoryFacts): NonNullable<DirectoryFacts['metadata']> {
  return d.metadata ?? { name: d.dir, alias: '', metaBackendFor: '' };
}

/** The key a directory with a run.sh lists under its own name. */
function ownEntry(d: DirectoryFacts): LocalAiBackend | null {
  if (d.runSh === 'missing') return null;
  return { key: d.dir, runs: d.dir, via: 'directory', from: d.dir, name: metadataOf(d).name, group: [], runnable: d.runSh === 'file' };
}

function namesOf(backends: Iterable<LocalAiBackend>): Map<string, number> {
  const names = new Map<string, number>();
  for (const b of backends) names.set(b.name, (names.get(b.name) ?? 0) + 1);
  return names;
}

/** A directory whose facts reach no key but its own: readable, no alias, no meta. */
function standsAlone(d: DirectoryFacts | undefined): boolean {
  return d === undefined || (d.error === null && !d.metadata?.alias && !d.metadata?.metaBackendFor);
}

/**
 * The listing after `changes`, made from `previous` by changing only their keys: when each changed directory stands
 * alone before and after, and no directory's metadata names it (as a meta's name or build, or as an alias). Then no
 * other key depends on it, and LocalAI lists it under its own name or not at all. Null when only a whole listing can
 * say.
 */
export function updatedListing(previous: LocalAiListing, changes: DirectoryChange[]): LocalAiListing | null {
  for (const { dir, before, now } of changes) if (!standsAlone(before) || !standsAlone(now) || previous.references.has(dir)) return null;
  if (changes.length === 0) return previous;
  const keys: [string, LocalAiBackend | undefined][] = [];
  const counted = new Map<string, number>();
  const count = (name: string, by: number) => counted.set(name, (counted.get(name) ?? previous.names.get(name) ?? 0) + by);
  for (const { dir, now } of changes) {
    const was = previous.backends.get(dir);
    const own = now ? ownEntry(now) : null;
    if (was) count(was.name, -1);
    if (own) count(own.name, 1);
    keys.push([dir, own ?? undefined]);
  }
  const names = previous.names.with([...counted].map(([name, n]) => [name, n > 0 ? n : undefined]));
  return { ...previous, backends: previous.backends.with(keys), names };
}

/**
 * Whether LocalAI's upgrade check (core/gallery/upgrade.go CheckUpgradesAgainst) looks at `key` at all, and if not,
 * why: it skips a key whose metadata names something else (an alias), and `X` while `X-development` is installed.
 */
export function upgradeCheckSkip(listing: LocalAiListing, key: string): string | null {
  const backend = listing.backends.get(key);
  if (!backend) return `LocalAI does not list ${key}`;
  if (backend.name !== key) return `LocalAI lists ${key} with the metadata of ${backend.from}`;
  const development = `${key}${DEVELOPMENT_SUFFIX}`;
  if (!key.endsWith(DEVELOPMENT_SUFFIX) && listing.names.has(development)) {
    return `${development} is installed, and LocalAI never offers ${key} over its development build`;
  }
  return null;
}
