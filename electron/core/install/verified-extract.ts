// Extracts an archive stream while hashing its raw bytes and reporting progress, then checks the expected sha256.
import { createHash } from 'node:crypto';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HangarError } from '../../../shared/errors.ts';
import { extractArchive } from './extract.ts';
import { DEFAULT_LIMITS, sizeText, TreeTally } from './limits.ts';
import type { FetchContext } from './source.ts';

class HashTap extends Transform {
  private readonly hash = createHash('sha256');
  private bytes = 0;

  constructor(
    private readonly onProgress: FetchContext['onProgress'],
    private readonly totalBytes: number | null,
    /** Bytes past the archive's end still count: an endless body must not be read forever. */
    private readonly maxBytes: number,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      callback(new HangarError('bad-input', `the download is larger than ${sizeText(this.maxBytes)}, the install size limit`));
      return;
    }
    this.hash.update(chunk);
    this.onProgress(this.bytes, this.totalBytes);
    callback(null, chunk);
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}

function normalizeSha256(value: string): string {
  return value.trim().toLowerCase().replace(/^sha256:/, '');
}

/** Fills stagingDir from `raw` (a tar or tar.gz byte stream); extractVerified returns the sha256 of the raw bytes. */
export interface VerifiedInput {
  raw: Readable;
  totalBytes: number | null;
  /** Names the artifact in errors. */
  what: string;
}

export async function extractVerified({ raw, totalBytes, what }: VerifiedInput, stagingDir: string, ctx: FetchContext): Promise<string> {
  const limits = ctx.limits ?? DEFAULT_LIMITS;
  const tap = new HashTap(ctx.onProgress, totalBytes, limits.maxBytes);
  const reading = pipeline(raw, tap, { signal: ctx.signal });
  reading.catch(() => undefined); // a read error reaches extractArchive through the destroyed tap
  await extractArchive(tap, stagingDir, { signal: ctx.signal, tally: new TreeTally('archive', limits) });
  await reading;
  const actual = tap.digest();
  if (ctx.sha256 !== undefined && normalizeSha256(ctx.sha256) !== actual) {
    throw new HangarError('bad-input', `sha256 mismatch for ${what}: expected ${normalizeSha256(ctx.sha256)}, got ${actual}`);
  }
  return actual;
}
