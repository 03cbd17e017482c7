// Safe tar extraction: streams entries from an (optionally gzipped) tar into a directory through TreeWriter,
// enforcing entry-count and size limits and refusing truncated archives.
import { PassThrough, Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { HangarError } from '../../../shared/errors.ts';
import { DEFAULT_LIMITS, RatioWatch, TreeTally } from './limits.ts';
import { nameTooLong } from './paths.ts';
import { readTar } from './tar-reader.ts';
import { SMALL_FILE, TreeWriter } from './tree-writer.ts';

export interface ExtractOptions {
  /** Counts toward the whole tree's limits; an archive that is one of several layers shares its tally. */
  tally?: TreeTally;
  /** Applies OCI whiteouts (`.wh.name`, `.wh..wh..opq`) against what destDir already holds. */
  whiteouts?: boolean;
  signal?: AbortSignal;
  /** For a compressed archive: watches the bytes inflated (the tar stream's) against the bytes read. */
  ratio?: RatioWatch;
}
export interface ExtractStats {
  entries: number;
  bytes: number;
}

/**
 * Inflate chunks large enough that most small files arrive inside one, and small enough to be dropped young: with
 * chunks of 1 MiB, the agent's heap went through full collections one after another while an install streamed.
 */
const INFLATE_CHUNK = 256 * 1024;

/** Counts the bytes passing and lets `onCount` see the running total. */
class ByteCounter extends Transform {
  private bytes = 0;

  constructor(private readonly onCount: (bytes: number) => void) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    this.onCount(this.bytes);
    callback(null, chunk);
  }
}

/** zlib reports a damaged archive with plain errors; fs and network errors carry an errno code. */
function asArchiveError(err: unknown): unknown {
  if (err instanceof HangarError || (err as Error | null)?.name === 'AbortError') return err;
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (err instanceof Error && (code === undefined || code.startsWith('Z_'))) {
    return new HangarError('bad-input', `archive is corrupt or truncated: ${err.message}`);
  }
  return err;
}

/** Extracts an UNCOMPRESSED tar stream into destDir (which exists). Rejects, never silently rewrites, bad entries. */
export async function extractTar(input: Readable, destDir: string, options: ExtractOptions = {}): Promise<ExtractStats> {
  const tally = options.tally ?? new TreeTally('archive', DEFAULT_LIMITS);
  const writer = new TreeWriter(destDir, options.whiteouts ?? false);
  const { ratio, signal } = options;
  const entriesBefore = tally.entries;
  let expanded = 0;
  // The reader reads a stream of its own, which an abort ends at once: `input` may take its time to be destroyed
  // (a generator's stream waits for its stalled source).
  const feed = new PassThrough();
  pipeline(input, feed, signal ? { signal } : {}).catch(() => undefined); // errors reach the reader through `feed`
  try {
    for await (const { header, body } of readTar(feed, { wholeUpTo: SMALL_FILE, onBytes: ratio && ((bytes) => ratio.inflatedTo(bytes)) })) {
      const size = header.type === 'directory' ? 0 : (header.size ?? 0);
      tally.add(size);
      expanded += size;
      try {
        const applying = writer.apply(header, body);
        if (applying) await applying;
      } catch (err) {
        throw nameTooLong(err, header.name);
      }
    }
    await writer.finish();
    return { entries: tally.entries - entriesBefore, bytes: expanded };
  } catch (err) {
    input.destroy();
    throw asArchiveError(err);
  }
}

/** Reads until at least `count` bytes are seen, then hands back those bytes and a stream of the whole input. */
async function peek(input: Readable, count: number): Promise<{ head: Buffer; whole: Readable }> {
  const iterator = input[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const chunks: Buffer[] = [];
  let length = 0;
  let ended = false;
  while (length < count && !ended) {
    const next = await iterator.next();
    if (next.done) ended = true;
    else {
      chunks.push(next.value);
      length += next.value.length;
    }
  }
  const head = Buffer.concat(chunks);
  async function* whole(): AsyncGenerator<Buffer> {
    try {
      if (head.length > 0) yield head;
      for (let next = ended ? null : await iterator.next(); next && !next.done; next = await iterator.next()) yield next.value;
    } finally {
      await iterator.return?.();
    }
  }
  return { head, whole: Readable.from(whole(), { objectMode: false }) };
}

/** Sniffs the gzip magic bytes and gunzips as needed, then extracts as extractTar does. */
export async function extractArchive(input: Readable, destDir: string, options: ExtractOptions = {}): Promise<ExtractStats> {
  const { head, whole } = await peek(input, 2);
  if (head[0] !== 0x1f || head[1] !== 0x8b) return extractTar(whole, destDir, options);
  const gunzip = createGunzip({ chunkSize: INFLATE_CHUNK });
  const ratio = new RatioWatch((options.tally?.limits ?? DEFAULT_LIMITS).maxRatio);
  const inflating = pipeline(whole, new ByteCounter((bytes) => ratio.readTo(bytes)), gunzip);
  inflating.catch(() => undefined); // a zlib error reaches extractTar through the destroyed gunzip stream
  const stats = await extractTar(gunzip, destDir, { ...options, ratio });
  await inflating;
  ratio.finish();
  return stats;
}
