// What a listing knows of one directory of the backends directory, read with blocking calls: a listing reads
// thousands of tiny files and stats whose inodes are cached, where the thread pool's round trips (a promise, a
// FileHandle, a Stats object each) cost far more than the calls themselves. The index makes them a slice at a time.
// Each read comes with a stamp of what it depends on, taken before it: a later stamp that differs means read again.
import { lstatSync, statSync, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import type { DirectoryFacts, RunShState } from '../gallery/localai-listing.ts';
import { METADATA_FILE, localaiTimestamp, parseMetadata, readMetadataText, readMetadataTextSync, type BackendMetadata } from './metadata.ts';
import { RUN_SH, lacksExecuteBits, whyNotRunnable } from './run-file.ts';
import { messageOf } from '../../../shared/error-text.ts';
import { HangarError } from '../../../shared/errors.ts';

/**
 * backend: a directory of a name Hangar manages. leftover: a working directory LocalAI (or Hangar 0.1) left behind,
 * `<name>.install-tmp` and the like. foreign: any other name (a space in it, say), which only LocalAI runs.
 */
export type DirectoryKind = 'backend' | 'leftover' | 'foreign';

export interface InstalledBackend {
  name: string;
  dir: string;
  kind: DirectoryKind;
  metadata: BackendMetadata | null;
  /** What LocalAI reads of the directory. */
  facts: DirectoryFacts;
  /** Why the backend cannot run, e.g. 'metadata.json is corrupt: <cause>' or 'run.sh is missing'. */
  broken: string | null;
  /** run.sh has no execute bit: it is made 0700 right before it starts, as LocalAI does. */
  madeRunnableOnStart: boolean;
  /** Metadata of the rollback tree, if there is one. */
  previous: BackendMetadata | null;
  hasPrevious: boolean;
}

/**
 * A file changed this recently may change again within the same tick of the filesystem's clock, its stamp unchanged
 * (git's "racily clean" entries): such a stamp vouches for nothing. Generous, for clocks coarser than a local disk's.
 */
const RACY_MS = 1000;

export interface DirectoryRead {
  /** null: not a directory (any more). */
  value: InstalledBackend | null;
  /** null: no stamp can vouch for this read. */
  stamp: string | null;
}

/** The files of one directory a read depends on, stat'ed once. */
interface Probe {
  metadata: Stats | undefined;
  runSh: Stats | undefined;
  /** Whether the path is a directory (following links, as a read of the files in it does). */
  isDir: boolean;
  /** The rollback tree's metadata.json, when the tree is there. */
  previous: Stats | undefined;
  stamp: string | null;
}

export interface ReadContext {
  backendsDir: string;
  previousRoot: string;
  /** The names in the rollback folder, read once for a whole pass. */
  previousNames: ReadonlySet<string>;
  kindOf(name: string): DirectoryKind;
  /** When the pass began (Date.now()): a file changed since, or just before, is racy. */
  startedAt: number;
}

/** What a read of `name` depends on, from its files' stats; null when no stamp can vouch for it. */
export function stampOf(context: ReadContext, name: string): string | null {
  return probe(context, name).stamp;
}

/** One directory as a listing shows it, and its stamp. */
export function readDirectory(context: ReadContext, name: string): DirectoryRead {
  const found = probe(context, name);
  if (!found.isDir) return { value: null, stamp: found.stamp };
  const live = join(context.backendsDir, name);
  const kind = context.kindOf(name);
  const current = readMetadataSync(live, name, found.metadata);
  const hasPrevious = kind === 'backend' && context.previousNames.has(name) && isDirSync(join(context.previousRoot, name));
  const runSh = found.runSh;
  const facts: DirectoryFacts = { dir: name, runSh: runShState(runSh), metadata: current.localai, error: current.broken };
  let broken = current.broken;
  if (broken === null && !current.metadata?.metaBackendFor) {
    if (facts.runSh === 'missing') broken = `${RUN_SH} is missing`;
    else if (facts.runSh === 'directory') broken = `${RUN_SH} is a directory, not a script`;
    else if (runSh) broken = whyNotRunnable(join(live, RUN_SH), runSh);
  }
  const madeRunnableOnStart = broken === null && runSh?.isFile() === true && lacksExecuteBits(runSh);
  const previousDir = join(context.previousRoot, name);
  const previous = hasPrevious ? readMetadataSync(previousDir, name, found.previous).metadata : null;
  const value = { name, dir: live, kind, metadata: current.metadata, facts, broken, madeRunnableOnStart, previous, hasPrevious };
  return { value, stamp: found.stamp };
}

function probe(context: ReadContext, name: string): Probe {
  const live = join(context.backendsDir, name);
  const metadata = statOf(live + sep + METADATA_FILE);
  const runSh = statOf(live + sep + RUN_SH);
  // Either file found: the path is a directory; neither: only a stat of the path itself says.
  const isDir = metadata !== undefined || runSh !== undefined || statOf(live)?.isDirectory() === true;
  const inPrevious = context.previousNames.has(name);
  const previous = inPrevious ? statOf(join(context.previousRoot, name, METADATA_FILE)) : undefined;
  const racy = context.startedAt - RACY_MS;
  if ((metadata?.ctimeMs ?? 0) > racy || (runSh?.ctimeMs ?? 0) > racy || (previous?.ctimeMs ?? 0) > racy) return { metadata, runSh, isDir, previous, stamp: null };
  const stamp = `${isDir ? 'd' : '-'}${inPrevious ? 'p' : '-'}|${fileStamp(metadata)}|${fileStamp(runSh)}|${fileStamp(previous)}`;
  return { metadata, runSh, isDir, previous, stamp };
}

/** Identity, size and change time (a write, a chmod, a chown, a rename over it: each changes it), and the mode. */
function fileStamp(s: Stats | undefined): string {
  return s ? `${s.ino}.${s.mode}.${s.size}.${s.ctimeMs}` : '-';
}

/** The stats of a path, following links; undefined when there is nothing there (or it cannot be stat'ed). */
function statOf(path: string): Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined; // ENOTDIR (a file where a directory was), EACCES: read as missing
  }
}

function isDirSync(path: string): boolean {
  try {
    return lstatSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
  } catch {
    return false;
  }
}

export function runShState(stats: Stats | undefined): RunShState {
  if (!stats) return 'missing';
  return stats.isDirectory() ? 'directory' : 'file';
}

export interface ReadMetadata {
  metadata: BackendMetadata | null;
  /** The fields LocalAI's listing reads, as it reads them: a file without a name has the name "". */
  localai: DirectoryFacts['metadata'];
  broken: string | null;
}

function readMetadataSync(dir: string, name: string, stats: Stats | undefined): ReadMetadata {
  if (!stats) return { metadata: null, localai: null, broken: null };
  let text: string;
  try {
    text = readMetadataTextSync(dir);
  } catch (err) {
    return unreadable(err);
  }
  return parsed(text, name, stats.mtime);
}

export async function readMetadata(dir: string, name: string): Promise<ReadMetadata> {
  const path = join(dir, METADATA_FILE);
  let text: string;
  try {
    text = await readMetadataText(dir);
  } catch (err) {
    return unreadable(err);
  }
  const mtime = await stat(path).then((s) => s.mtime, () => new Date());
  return parsed(text, name, mtime);
}

function unreadable(err: unknown): ReadMetadata {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOENT') return { metadata: null, localai: null, broken: null };
  const why = err instanceof HangarError ? err.message : (code ?? String(err));
  return { metadata: null, localai: null, broken: `${METADATA_FILE} is unreadable: ${why}` };
}

function parsed(text: string, name: string, mtime: Date): ReadMetadata {
  try {
    const metadata = parseMetadata(text, '', '');
    const localai = { name: metadata.name, alias: metadata.alias ?? '', metaBackendFor: metadata.metaBackendFor ?? '' };
    metadata.name ||= name;
    if (metadata.installedAt === '') metadata.installedAt = localaiTimestamp(mtime);
    return { metadata, localai, broken: null };
  } catch (err) {
    return { metadata: null, localai: null, broken: `${METADATA_FILE} is corrupt: ${messageOf(err)}` };
  }
}
