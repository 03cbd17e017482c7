// Decodes one 512-byte tar header block (ustar, GNU and old v7 forms) and the pax records that extend it.
import { HangarError } from '../../../shared/errors.ts';
import type { EntryHeader } from './tree-writer.ts';

export const BLOCK = 512;

/** What a header block says, before pax or GNU long-name entries are applied to it. */
export interface RawHeader extends Required<Pick<EntryHeader, 'name' | 'size' | 'mode'>> {
  typeflag: string;
  linkname: string;
}

const TYPES: Record<string, string> = {
  '0': 'file',
  '': 'file',
  '1': 'link',
  '2': 'symlink',
  '3': 'character-device',
  '4': 'block-device',
  '5': 'directory',
  '6': 'fifo',
  '7': 'contiguous-file',
};

export function corrupt(message: string): HangarError {
  return new HangarError('bad-input', `archive is corrupt or truncated: ${message}`);
}

function text(block: Buffer, start: number, length: number): string {
  const end = block.indexOf(0, start);
  return block.toString('utf8', start, end === -1 || end > start + length ? start + length : end);
}

/** Octal, space or NUL padded; or GNU's base-256 (high bit of the first byte set) for values past 8 GiB. */
function number(block: Buffer, start: number, length: number): number {
  if (block[start]! & 0x80) {
    let value = block[start]! & 0x7f;
    for (let i = start + 1; i < start + length; i++) value = value * 256 + block[i]!;
    return value;
  }
  return plainOctal(block, start, start + length) ?? spelledNumber(block, start, length);
}

/** The usual spelling, read without making a string (three fields of every entry): spaces, digits, then padding. */
function plainOctal(block: Buffer, start: number, end: number): number | null {
  let i = start;
  while (i < end && block[i] === 0x20) i++;
  let value = 0;
  for (; i < end && block[i]! >= 0x30 && block[i]! <= 0x37; i++) value = value * 8 + (block[i]! - 0x30);
  for (; i < end; i++) if (block[i] !== 0 && block[i] !== 0x20) return null;
  return value;
}

/** Any other spelling: what is left once the padding is trimmed must be octal digits. */
function spelledNumber(block: Buffer, start: number, length: number): number {
  const field = block.toString('latin1', start, start + length).replace(/[\0 ]+$/, '').trim();
  if (field === '') return 0;
  if (!/^[0-7]+$/.test(field)) throw corrupt(`a header field holds "${field}", not an octal number`);
  return parseInt(field, 8);
}

export function isZeroBlock(block: Buffer): boolean {
  for (let i = 0; i < BLOCK; i++) if (block[i] !== 0) return false;
  return true;
}

const USTAR = Buffer.from('ustar\0', 'latin1');

function isPosixUstar(block: Buffer): boolean {
  return block.compare(USTAR, 0, USTAR.length, 257, 263) === 0;
}

/** Throws on a header whose checksum does not match: what follows it cannot be trusted to be an archive. */
export function decodeHeader(block: Buffer, offset: number): RawHeader {
  let sum = 8 * 0x20; // the checksum field counts as eight spaces
  for (let i = 0; i < 148; i++) sum += block[i]!;
  for (let i = 156; i < BLOCK; i++) sum += block[i]!;
  if (sum !== number(block, 148, 8)) throw corrupt(`the header at byte ${offset} has a bad checksum`);
  let name = text(block, 0, 100);
  // Only POSIX ustar has a name prefix; GNU's "ustar  " keeps access and change times in the same place.
  if (isPosixUstar(block)) {
    const prefix = text(block, 345, 155);
    if (prefix !== '') name = `${prefix}/${name}`;
  }
  const typeflag = block[156] === 0 ? '' : String.fromCharCode(block[156]!);
  return { name, typeflag, linkname: text(block, 157, 100), size: number(block, 124, 12), mode: number(block, 100, 8) };
}

/** The entry's type by its flag and its whole name (old tars mark a directory by a trailing slash alone). */
export function typeName(typeflag: string, name: string): string {
  const type = TYPES[typeflag];
  if (type === 'file' && name.endsWith('/')) return 'directory';
  return type ?? typeflag;
}

/** Pax records: "LENGTH key=value\n", LENGTH counting the whole record. */
export function parsePax(body: Buffer): Map<string, string> {
  const records = new Map<string, string>();
  let at = 0;
  while (at < body.length && body[at] !== 0) {
    const space = body.indexOf(0x20, at);
    const length = space === -1 ? NaN : Number(body.toString('latin1', at, space));
    if (!Number.isInteger(length) || length <= space - at || at + length > body.length) throw corrupt('a pax header is malformed');
    const record = body.toString('utf8', space + 1, at + length - 1);
    const equals = record.indexOf('=');
    if (equals === -1) throw corrupt('a pax record has no "="');
    records.set(record.slice(0, equals), record.slice(equals + 1));
    at += length;
  }
  return records;
}
