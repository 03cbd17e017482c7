// Reads tar entries from a byte stream without a stream per entry: a small file's body is handed over as the slices
// of the chunks it arrived in, so a tree of many small files costs about what its bytes cost. Large bodies stream.
import { HangarError } from '../../../shared/errors.ts';
import { BLOCK, corrupt, decodeHeader, isZeroBlock, parsePax, typeName } from './tar-header.ts';
import type { EntryBody, EntryHeader } from './tree-writer.ts';

export interface TarEntry {
  header: EntryHeader;
  /** Whole (an array of slices) up to `wholeUpTo` bytes, else a stream that must be read before the next entry. */
  body: EntryBody;
}

export interface TarReadOptions {
  /** Bodies up to this size arrive whole. */
  wholeUpTo: number;
  /** Sees the running total of bytes read; may refuse to go on by throwing. */
  onBytes?: ((total: number) => void) | undefined;
}

/** Pax headers (x, g) and GNU long names and link targets (L, K): entries that describe the next entry. */
const META_TYPES = new Set(['x', 'g', 'L', 'K']);
/** None is anywhere near this large. */
const MAX_META_ENTRY = 1024 * 1024;

/** The bytes read and not yet taken, as the chunks they came in. */
class ByteQueue {
  private chunks: Buffer[] = [];
  /** Where the unread bytes of the first chunk start: taking from it moves this on rather than slicing it again. */
  private head = 0;
  private length = 0;
  private total = 0;
  private ended = false;

  constructor(
    private readonly source: AsyncIterator<Buffer>,
    private readonly options: TarReadOptions,
  ) {}

  /** Whether `count` bytes are queued already: most entries of a tree of small files need no await at all. */
  holds(count: number): boolean {
    return this.length >= count;
  }

  /** Reads until `count` bytes are queued; false if the input ends first. */
  async fill(count: number): Promise<boolean> {
    while (this.length < count && !this.ended) {
      const next = await this.source.next();
      if (next.done) this.ended = true;
      else if (next.value.length > 0) {
        this.chunks.push(next.value);
        this.length += next.value.length;
        this.total += next.value.length;
        this.options.onBytes?.(this.total);
      }
    }
    return this.length >= count;
  }

  async need(count: number): Promise<void> {
    if (!(await this.fill(count))) throw corrupt('unexpected end of data');
  }

  /** Takes `count` queued bytes as slices of the chunks that hold them. */
  take(count: number): Buffer[] {
    const out: Buffer[] = [];
    while (count > 0) {
      const first = this.chunks[0]!;
      const unread = first.length - this.head;
      if (unread <= count) {
        out.push(this.head === 0 ? first : first.subarray(this.head));
        this.dropFirst();
        count -= unread;
      } else {
        out.push(first.subarray(this.head, this.head + count));
        this.head += count;
        this.length -= count;
        count = 0;
      }
    }
    return out;
  }

  /** Drops `count` queued bytes (padding), making no slices of them. */
  skip(count: number): void {
    while (count > 0) {
      const unread = this.chunks[0]!.length - this.head;
      if (unread > count) {
        this.head += count;
        this.length -= count;
        return;
      }
      this.dropFirst();
      count -= unread;
    }
  }

  takeContiguous(count: number): Buffer {
    const first = this.chunks[0]!;
    if (first.length - this.head < count) return Buffer.concat(this.take(count), count);
    const out = first.subarray(this.head, this.head + count);
    this.skip(count);
    return out;
  }

  /** Takes what the first queued chunk holds, up to `max` bytes. */
  takeSome(max: number): Buffer {
    return this.take(Math.min(max, this.chunks[0]!.length - this.head))[0]!;
  }

  private dropFirst(): void {
    this.length -= this.chunks[0]!.length - this.head;
    this.chunks.shift();
    this.head = 0;
  }

  async drain(): Promise<void> {
    this.chunks = [];
    this.head = this.length = 0;
    while (await this.fill(1)) {
      this.chunks = [];
      this.head = this.length = 0;
    }
  }
}

function padding(size: number): number {
  return (BLOCK - (size % BLOCK)) % BLOCK;
}

/** Yields each entry of an uncompressed tar; throws on a bad header, on truncation and on a missing end marker. */
export async function* readTar(input: AsyncIterable<Buffer>, options: TarReadOptions): AsyncGenerator<TarEntry> {
  const source = input[Symbol.asyncIterator]();
  const queue = new ByteQueue(source, options);
  const globalPax = new Map<string, string>();
  let pax = new Map<string, string>();
  let longName: string | undefined;
  let longLink: string | undefined;
  let offset = 0;
  try {
    for (;;) {
      if (!queue.holds(BLOCK) && !(await queue.fill(BLOCK))) throw new HangarError('bad-input', 'archive is truncated: it ends without an end-of-archive marker');
      const block = queue.takeContiguous(BLOCK);
      if (isZeroBlock(block)) break;
      const raw = decodeHeader(block, offset);
      const size = Number(pax.get('size') ?? globalPax.get('size') ?? raw.size);
      if (!Number.isSafeInteger(size) || size < 0) throw corrupt(`the entry at byte ${offset} has no valid size`);
      offset += BLOCK + size + padding(size);

      if (META_TYPES.has(raw.typeflag)) {
        if (size > MAX_META_ENTRY) throw corrupt(`a ${raw.typeflag} header entry of ${size} bytes`);
        await queue.need(size + padding(size));
        const body = queue.takeContiguous(size);
        queue.skip(padding(size));
        if (raw.typeflag === 'x') pax = parsePax(body);
        else if (raw.typeflag === 'g') for (const [key, value] of parsePax(body)) globalPax.set(key, value);
        else if (raw.typeflag === 'L') longName = body.toString('utf8').replace(/\0+$/, '');
        else longLink = body.toString('utf8').replace(/\0+$/, '');
        continue;
      }

      const name = pax.get('path') ?? longName ?? globalPax.get('path') ?? raw.name;
      const header: EntryHeader = {
        name,
        linkname: pax.get('linkpath') ?? longLink ?? globalPax.get('linkpath') ?? raw.linkname,
        type: typeName(raw.typeflag, name),
        size,
        mode: raw.mode,
      };
      if (pax.size > 0) pax = new Map();
      longName = longLink = undefined;

      if (size <= options.wholeUpTo) {
        if (!queue.holds(size + padding(size))) await queue.need(size + padding(size));
        const body = queue.take(size);
        queue.skip(padding(size));
        yield { header, body };
        continue;
      }
      let left = size;
      async function* stream(): AsyncGenerator<Buffer> {
        while (left > 0) {
          await queue.need(1);
          const chunk = queue.takeSome(left);
          left -= chunk.length;
          yield chunk;
        }
      }
      yield { header, body: stream() };
      while (left > 0) {
        await queue.need(1);
        left -= queue.takeSome(left).length;
      }
      await queue.need(padding(size));
      queue.skip(padding(size));
    }
    // The rest (a second zero block, a blocking factor's padding) is read too: a digest covers the whole input.
    await queue.drain();
  } finally {
    await source.return?.();
  }
}
