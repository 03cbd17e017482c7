// metadata.json exactly as LocalAI writes it (core/gallery/backends.go writeBackendMetadata: json.MarshalIndent of
// BackendMetadata, its keys in struct order, empty fields omitted, no trailing newline), plus Hangar's `sha256` last.
import { closeSync, constants, fstatSync, openSync, readFileSync, type Stats } from 'node:fs';
import { open, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from 'zod';
import { HangarError } from '../../../shared/errors.ts';
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

/** Far more than any record of an install holds. */
const METADATA_MAX_BYTES = 1 << 20;
/** Opening a FIFO to read waits for a writer; without blocking, it opens at once and its stats tell. */
const OPEN_TO_READ = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

/**
 * Why metadata.json with these stats is not read, or null: LocalAI writes its record through whatever link an image
 * left at that name, and a link to /dev/zero, or a FIFO, would be read forever or waited on forever.
 */
function notARecord(stats: Stats): string | null {
  if (!stats.isFile()) return `it is ${stats.isFIFO() ? 'a FIFO' : stats.isSocket() ? 'a socket' : stats.isDirectory() ? 'a directory' : 'a device'}, not a file`;
  return stats.size > METADATA_MAX_BYTES ? `it is ${sizeText(stats.size)}, more than a record of an install holds` : null;
}

/** The text of `<dir>/metadata.json`; a record that is not one (notARecord) throws a HangarError saying why. */
export function readMetadataTextSync(dir: string): string {
  const fd = openSync(join(dir, METADATA_FILE), OPEN_TO_READ);
  try {
    const refused = notARecord(fstatSync(fd));
    if (refused !== null) throw new HangarError('bad-input', refused);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

export async function readMetadataText(dir: string): Promise<string> {
  const handle = await open(join(dir, METADATA_FILE), OPEN_TO_READ);
  try {
    const refused = notARecord(await handle.stat());
    if (refused !== null) throw new HangarError('bad-input', refused);
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
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
