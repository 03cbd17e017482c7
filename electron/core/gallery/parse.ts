// Parses a LocalAI backend gallery index (a YAML list of backends, with anchors and `<<` merge keys).
// Whole-document problems throw; a bad entry is reported with its position and skipped.
import { boolCoreTag, constructFromEvents, EVENT_ID, mapTag, mergeTag, nullCoreTag, parseEvents, Schema, seqTag, strTag, YAMLException, type Event } from 'js-yaml';
import { HangarError } from '../../../shared/errors.ts';
import type { GalleryEntry, IndexSource } from './types.ts';
import { oneLine } from '../../../shared/error-text.ts';
import { backendNameProblem, VERSION_MAX } from '../../../shared/names.ts';

/**
 * YAML's core schema with `<<` merge keys (LocalAI's index writes them `!!merge <<: *anchor`), but no numbers: every
 * known field is text, so plain scalars are never read as numbers (`version: 1.10` stays "1.10").
 */
const schema = new Schema([strTag, seqTag, mapTag, nullCoreTag, boolCoreTag, mergeTag]);
/** Far above LocalAI's index (a few thousand merged keys); a merge bomb is stopped at it. */
const MAX_MERGE_KEYS = 1_000_000;
/** js-yaml shares an alias's value rather than copying it; what aliases expand to is bounded below. */
const MAX_ALIASES = 10_000;

const textFields = ['alias', 'uri', 'version', 'sha256', 'description', 'license', 'icon'] as const;
const listFields = ['mirrors', 'tags', 'urls'] as const;

type EntryFields = Omit<GalleryEntry, 'gallery' | 'baseDir' | 'baseUrl'>;

export interface ParsedIndex {
  entries: GalleryEntry[];
  errors: string[];
}

export function parseGalleryIndex(text: string, source: IndexSource): ParsedIndex {
  let events: Event[];
  let documents: unknown[];
  try {
    events = parseEvents(text, {});
    documents = constructFromEvents(events, { source: text, schema, maxAliases: MAX_ALIASES, maxTotalMergeKeys: MAX_MERGE_KEYS });
  } catch (error) {
    throw new HangarError('bad-input', `gallery "${source.gallery}": invalid YAML: ${yamlReason(error)}`);
  }
  if (documents.length > 1) throw new HangarError('bad-input', `gallery "${source.gallery}": the index must be one YAML document, not ${documents.length}`);
  const [top = null] = documents;
  if (top === null) return { entries: [], errors: [] };
  if (!Array.isArray(top)) {
    throw new HangarError('bad-input', `gallery "${source.gallery}": the index must be a YAML list of backends`);
  }
  if (expandedSize(top, GALLERY_MAX_EXPANDED) > GALLERY_MAX_EXPANDED) {
    throw new HangarError('bad-input', `gallery "${source.gallery}": its anchors expand to more than ${mebibytes(GALLERY_MAX_EXPANDED)} of text; refused`);
  }
  const lines = linesAt(text, itemStarts(events));
  const entries: GalleryEntry[] = [];
  const errors: string[] = [];
  top.forEach((value, index) => {
    const line = lines[index];
    const where = line === undefined ? `entry ${index + 1}` : `entry ${index + 1} (line ${line})`;
    try {
      entries.push({ ...readEntry(value, where), ...source });
    } catch (error) {
      errors.push((error as Error).message);
    }
  });
  return { entries, errors };
}

/** Where each item of the top-level list begins in the text, from the parser's events. */
function itemStarts(events: Event[]): number[] {
  const starts: number[] = [];
  // The document opens depth 1 and the list depth 2: its items are the events met at depth 2.
  let depth = 0;
  for (const event of events) {
    if (event.type === EVENT_ID.POP) depth--;
    else if (event.type === EVENT_ID.DOCUMENT) depth++;
    else {
      if (depth === 2) starts.push(event.type === EVENT_ID.SCALAR ? event.valueStart : event.type === EVENT_ID.ALIAS ? event.anchorStart : event.start);
      if (event.type === EVENT_ID.SEQUENCE || event.type === EVENT_ID.MAPPING) depth++;
    }
  }
  return starts;
}

/** The line of each offset (given in order), in one pass over the text. */
function linesAt(text: string, offsets: number[]): number[] {
  const lines: number[] = [];
  let line = 1;
  let from = 0;
  for (const offset of offsets) {
    for (let i = text.indexOf('\n', from); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
      line++;
      from = i + 1;
    }
    lines.push(line);
  }
  return lines;
}

/** The largest gallery Hangar reads (LocalAI's own index is about 0.3 MiB). */
export const GALLERY_MAX_BYTES = 16 * 1024 * 1024;
/**
 * The most text a gallery may expand to once anchors are resolved. Aliases share one value in memory, but every
 * consumer (views, JSON replies) copies it per use: a 1 MiB anchor used 9,000 times is 9 GiB downstream.
 */
export const GALLERY_MAX_EXPANDED = 64 * 1024 * 1024;

export function mebibytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** Size of value with every alias counted each time it is used; stops counting once past budget. */
function expandedSize(value: unknown, budget: number): number {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && size <= budget) {
    const item = stack.pop();
    if (typeof item === 'string') size += item.length + 1;
    else if (Array.isArray(item)) {
      size += 1;
      for (const child of item) stack.push(child);
    } else if (item !== null && typeof item === 'object') {
      size += 1;
      for (const [key, child] of Object.entries(item)) {
        size += key.length;
        stack.push(child);
      }
    } else size += 1;
  }
  return size;
}

function readEntry(value: unknown, where: string): EntryFields {
  if (!isRecord(value)) throw new HangarError('bad-input', `${where}: is not a mapping`);
  const name = value.name;
  if (name === undefined || name === null || name === '') throw new HangarError('bad-input', `${where}: has no "name"`);
  if (typeof name !== 'string') throw new HangarError('bad-input', `${where}: "name" must be text`);
  // The name is the directory an install writes: one that no install would take is never offered.
  const nameProblem = backendNameProblem(name);
  if (nameProblem) throw new HangarError('bad-input', `${where} ${JSON.stringify(name.slice(0, 40))}: ${nameProblem}`);
  const fail = (field: string, expected: string) => new Error(`${where} "${name}": "${field}" must be ${expected}`);

  const text = Object.fromEntries(
    textFields.map((field) => {
      const raw = value[field];
      if (raw === undefined || raw === null || raw === '') return [field, null];
      if (typeof raw !== 'string') throw fail(field, 'text');
      return [field, raw];
    }),
  ) as Record<(typeof textFields)[number], string | null>;
  if (text.version !== null && text.version.length > VERSION_MAX) throw fail('version', `at most ${VERSION_MAX} characters`);
  if (text.sha256 !== null) {
    if (!/^[0-9a-f]{64}$/i.test(text.sha256)) throw fail('sha256', '64 hex digits');
    text.sha256 = text.sha256.toLowerCase();
  }

  const lists = Object.fromEntries(
    listFields.map((field) => {
      const raw = value[field];
      if (raw === undefined || raw === null) return [field, []];
      if (!Array.isArray(raw) || !raw.every((item) => typeof item === 'string')) throw fail(field, 'a list of strings');
      return [field, raw];
    }),
  ) as Record<(typeof listFields)[number], string[]>;

  return { name, ...text, ...lists, capabilities: readCapabilities(value.capabilities, () => fail('capabilities', 'a map of capability to backend name')) };
}

function readCapabilities(raw: unknown, fail: () => Error): Record<string, string> | null {
  if (raw === undefined || raw === null) return null;
  if (!isRecord(raw)) throw fail();
  const entries = Object.entries(raw);
  if (!entries.every(([, target]) => typeof target === 'string' && target !== '')) throw fail();
  return entries.length === 0 ? null : (Object.fromEntries(entries) as Record<string, string>);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The parser's reason and where, on one line (its message adds the source around the place). */
function yamlReason(error: unknown): string {
  if (error instanceof YAMLException && error.mark) return `${error.reason} at line ${error.mark.line + 1}, column ${error.mark.column + 1}`;
  return oneLine(error);
}
