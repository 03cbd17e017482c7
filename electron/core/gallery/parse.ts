// Parses a LocalAI backend gallery index (a YAML list of backends, with anchors and `<<` merge keys).
// Whole-document problems throw; a bad entry is reported with its position and skipped.
import { isSeq, LineCounter, parseDocument, type Document, type Tags } from 'yaml';
import { HangarError } from '../../../shared/errors.ts';
import type { GalleryEntry, IndexSource } from './types.ts';
import { oneLine } from '../../../shared/error-text.ts';

// Every known field is text, so plain scalars are never read as numbers: `version: 1.10` stays "1.10".
const numberTags = new Set(['tag:yaml.org,2002:int', 'tag:yaml.org,2002:float']);
const yamlOptions = {
  merge: true,
  customTags: (tags: Tags) => tags.filter((tag) => !(typeof tag === 'object' && 'tag' in tag && numberTags.has(tag.tag))),
};

const textFields = ['alias', 'uri', 'version', 'sha256', 'description', 'license', 'icon'] as const;
const listFields = ['mirrors', 'tags', 'urls'] as const;

type EntryFields = Omit<GalleryEntry, 'gallery' | 'baseDir' | 'baseUrl'>;

export interface ParsedIndex {
  entries: GalleryEntry[];
  errors: string[];
}

export function parseGalleryIndex(text: string, source: IndexSource): ParsedIndex {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { ...yamlOptions, lineCounter });
  const syntaxError = doc.errors[0];
  if (syntaxError) {
    throw new HangarError('bad-input', `gallery "${source.gallery}": invalid YAML: ${yamlReason(syntaxError)}`);
  }
  if (doc.contents === null) return { entries: [], errors: [] };
  if (!isSeq(doc.contents)) {
    throw new HangarError('bad-input', `gallery "${source.gallery}": the index must be a YAML list of backends`);
  }

  const items = doc.contents.items;
  const values = expandAliases(doc, source.gallery);
  const entries: GalleryEntry[] = [];
  const errors: string[] = [];
  values.forEach((value, index) => {
    const offset = (items[index] as { range?: [number, number, number] } | null)?.range?.[0];
    const where = offset === undefined ? `entry ${index + 1}` : `entry ${index + 1} (line ${lineCounter.linePos(offset).line})`;
    try {
      entries.push({ ...readEntry(value, where), ...source });
    } catch (error) {
      errors.push((error as Error).message);
    }
  });
  return { entries, errors };
}

// yaml's default alias budget (100) would refuse a plain anchor merged into 100+ entries; nested alias
// bombs still multiply past this bound quickly.
const maxAliasCount = 10_000;

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

function expandAliases(doc: Document, gallery: string): unknown[] {
  let values: unknown[];
  try {
    values = doc.toJS({ maxAliasCount }) as unknown[];
  } catch (error) {
    throw new HangarError('bad-input', `gallery "${gallery}": invalid YAML: ${yamlReason(error)}`);
  }
  if (expandedSize(values, GALLERY_MAX_EXPANDED) > GALLERY_MAX_EXPANDED) {
    throw new HangarError('bad-input', `gallery "${gallery}": its anchors expand to more than ${mebibytes(GALLERY_MAX_EXPANDED)} of text; refused`);
  }
  return values;
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
  const fail = (field: string, expected: string) => new Error(`${where} "${name}": "${field}" must be ${expected}`);

  const text = Object.fromEntries(
    textFields.map((field) => {
      const raw = value[field];
      if (raw === undefined || raw === null || raw === '') return [field, null];
      if (typeof raw !== 'string') throw fail(field, 'text');
      return [field, raw];
    }),
  ) as Record<(typeof textFields)[number], string | null>;
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

/** The yaml package's message without the source excerpt its first line introduces with a colon. */
function yamlReason(error: unknown): string {
  return oneLine(error).replace(/:$/, '');
}
