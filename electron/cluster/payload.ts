// Bodies of any size over NATS, whose server refuses a message above its max_payload (1 MiB by default, announced
// in its INFO). A large body is gzip-compressed; a reply still too large for one message goes as numbered parts,
// each under the limit. Whatever would need more than MAX_PARTS parts is not sent: the caller gets an error instead.
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { HangarError } from '../../shared/errors.ts';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** Bodies above this are compressed (JSON of many backends shrinks about tenfold). */
export const COMPRESS_ABOVE = 32 * 1024;
/** Room kept in each message for the headers that sign it. */
export const HEADER_ROOM = 2048;
/** A reply is at most this many messages (nats-cluster configs allow a node as many responses per request). */
export const MAX_PARTS = 64;
/**
 * What a body may be once inflated, counted as it inflates (a bomb is cut off there): far above any real reply (5,000
 * backends listed are about 2.2 MiB) or event (a gallery's entries go 500 to an event), far below what hurts a viewer.
 */
export const MAX_REPLY_BYTES = 16 * 1024 * 1024;
export const MAX_EVENT_BYTES = 4 * 1024 * 1024;

export type Encoding = 'gzip' | undefined;

export interface Encoded {
  encoding: Encoding;
  parts: Buffer[];
}

/** The body as messages of at most `maxPayload` bytes each (headers included); null when it needs over MAX_PARTS. */
export async function encodeBody(text: string, maxPayload: number, maxParts = MAX_PARTS): Promise<Encoded | null> {
  let body = Buffer.from(text);
  let encoding: Encoding;
  if (body.length > COMPRESS_ABOVE) {
    body = await gzipAsync(body);
    encoding = 'gzip';
  }
  const partBytes = Math.max(1024, maxPayload - HEADER_ROOM);
  const count = Math.max(1, Math.ceil(body.length / partBytes));
  if (count > maxParts) return null;
  return { encoding, parts: Array.from({ length: count }, (_, i) => body.subarray(i * partBytes, (i + 1) * partBytes)) };
}

/** The text of a body put back together; rejects one larger than `maxBytes`, a compressed one as soon as it inflates past it. */
export async function decodeBody(parts: Uint8Array[], encoding: string | undefined, maxBytes: number): Promise<string> {
  const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  if (body.byteLength > maxBytes) throw new HangarError('bad-input', `the body is larger than ${maxBytes} bytes`);
  if (encoding === undefined) return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString();
  if (encoding !== 'gzip') throw new HangarError('bad-input', `unknown encoding "${encoding.slice(0, 32)}"`);
  return (await gunzipAsync(body, { maxOutputLength: maxBytes })).toString();
}

/** Parses "INDEX/COUNT" of a reply's part; null unless 0 ≤ INDEX < COUNT ≤ MAX_PARTS. */
export function parsePart(text: string | undefined): { index: number; count: number } | null {
  const match = /^(\d{1,3})\/(\d{1,3})$/.exec(text ?? '0/1');
  if (!match) return null;
  const [index, count] = [Number(match[1]), Number(match[2])];
  return index < count && count <= MAX_PARTS ? { index, count } : null;
}

/** Collects a reply's parts, in any order, until it has them all. */
export class PartCollector {
  private readonly parts: (Uint8Array | undefined)[] = [];
  private count = 0;
  private have = 0;
  private bytes = 0;
  encoding: string | undefined;

  /** Adds a part; returns every part in order once the last arrived. A part that disagrees with the first is refused. */
  add(part: { index: number; count: number }, data: Uint8Array, encoding: string | undefined): Uint8Array[] | 'conflict' | 'too large' | undefined {
    if (this.have === 0) {
      this.count = part.count;
      this.encoding = encoding;
    } else if (part.count !== this.count || encoding !== this.encoding) return 'conflict';
    if (this.parts[part.index] === undefined) {
      this.bytes += data.byteLength;
      if (this.bytes > MAX_REPLY_BYTES) return 'too large';
      this.parts[part.index] = data;
      this.have++;
    }
    return this.have === this.count ? (this.parts as Uint8Array[]) : undefined;
  }
}
