// metadata.json exactly as LocalAI writes it (core/gallery/backends.go writeBackendMetadata: json.MarshalIndent of
// BackendMetadata, its keys in struct order, empty fields omitted, no trailing newline), plus Hangar's `sha256` last.
import { rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from 'zod';
import { HangarError } from '../../../shared/errors.ts';
import { readPlacedFile, readPlacedFileSync, type PlacedFileRule } from '../placed-file.ts';
import { sizeText } from './limits.ts';

export interface BackendMetadata {
  name: string;
  alias: string | null;
  metaBackendFor: string | null;
  galleryUrl: string | null;
  installedAt: string;
  version: string | null;
  uri: string | null;
  digest: string | null;
  sha256: string | null;
}

export const METADATA_FILE = 'metadata.json';

const KEYS = {
  alias: 'alias',
  metaBackendFor: 'meta_backend_for',
  name: 'name',
  galleryUrl: 'gallery_url',
  installedAt: 'installed_at',
  version: 'version',
  uri: 'uri',
  digest: 'digest',
  sha256: 'sha256',
} as const satisfies Record<keyof BackendMetadata, string>;

const optional = z.string().nullish();
const onDisk = z.object(Object.fromEntries(Object.values(KEYS).map((key) => [key, optional])) as Record<(typeof KEYS)[keyof typeof KEYS], typeof optional>);

/**
 * LocalAI writes its record through whatever link an image left at that name: a link to /dev/zero, a FIFO or a huge
 * file is not read (placed-file.ts).
 */
const RECORD_RULE: PlacedFileRule = { maxBytes: 1 << 20, tooLarge: (size) => `it is ${sizeText(size)}, more than a record of an install holds` };

/** The text of `<dir>/metadata.json`; one that is not a record throws a HangarError saying why. */
export function readMetadataTextSync(dir: string): string {
  return readPlacedFileSync(join(dir, METADATA_FILE), RECORD_RULE);
}

export function readMetadataText(dir: string): Promise<string> {
  return readPlacedFile(join(dir, METADATA_FILE), RECORD_RULE);
}

/** Parses metadata.json text; missing fields become null (LocalAI omits empty ones). Throws on bad JSON or types. */
export function parseMetadata(text: string, dirName: string, fallbackInstalledAt: string): BackendMetadata {
  const parsed = onDisk.safeParse(JSON.parse(text));
  if (!parsed.success) throw new HangarError('bad-input', parsed.error.issues.map((i) => `${i.path.join('.') || 'document'}: ${i.message}`).join(', '));
  const field = (key: keyof BackendMetadata): string | null => parsed.data[KEYS[key]] || null;
  return {
    name: field('name') ?? dirName,
    alias: field('alias'),
    metaBackendFor: field('metaBackendFor'),
    galleryUrl: field('galleryUrl'),
    installedAt: field('installedAt') ?? fallbackInstalledAt,
    version: field('version'),
    uri: field('uri'),
    digest: field('digest'),
    sha256: field('sha256'),
  };
}

export function serializeMetadata(meta: BackendMetadata): string {
  const entries = (Object.keys(KEYS) as (keyof BackendMetadata)[]).filter((k) => meta[k]).map((k) => [KEYS[k], meta[k]]);
  return goJsonEscape(JSON.stringify(Object.fromEntries(entries), null, 2));
}

/** Go's encoder also escapes <, >, & and the two Unicode line separators inside strings. */
function goJsonEscape(json: string): string {
  return json.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A time as LocalAI writes `installed_at`: Go's time.RFC3339 layout of the local time, whole seconds and the zone's
 * offset (`2026-08-22T22:44:03+02:00`, `Z` when local time is UTC).
 */
export function localaiTimestamp(at: Date = new Date()): string {
  const two = (n: number) => String(n).padStart(2, '0');
  const offset = -at.getTimezoneOffset();
  const zone = offset === 0 ? 'Z' : `${offset > 0 ? '+' : '-'}${two(Math.floor(Math.abs(offset) / 60))}:${two(Math.abs(offset) % 60)}`;
  const date = `${String(at.getFullYear()).padStart(4, '0')}-${two(at.getMonth() + 1)}-${two(at.getDate())}`;
  return `${date}T${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}${zone}`;
}

/** Writes `<dir>/metadata.json` atomically (a reader sees the old file or the new one, never half). */
export async function writeMetadataFile(dir: string, meta: BackendMetadata): Promise<void> {
  const path = join(dir, METADATA_FILE);
  // The tree came from an archive, an image or a folder: whatever it holds at the temporary name (a link out of the
  // tree, say) is removed, never written through; the rename replaces a link at metadata.json itself.
  await rm(`${path}.tmp`, { recursive: true, force: true });
  await writeFile(`${path}.tmp`, serializeMetadata(meta), { flag: 'wx' });
  await rename(`${path}.tmp`, path);
}
