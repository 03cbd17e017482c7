// A blob as a byte stream that is hashed as it flows and fails at its end unless size and digest match.
// A connection dropped mid-blob is resumed with a Range request from the byte where it stopped.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { HangarError } from '../../../../shared/errors.ts';
import type { Descriptor } from './manifest.ts';
import { bodyChunks, describe, discard, type Repository } from './repository.ts';

const MAX_RESUMES = 5;
/** Lets the download run ahead of a briefly busy extractor instead of stalling it at the default 16 KiB. */
const READ_AHEAD_BYTES = 1024 * 1024;

export interface BlobStreamOptions {
  signal?: AbortSignal;
  /** Called with the size of each chunk as it arrives. */
  onBytes?(bytes: number): void;
}

export function openVerifiedBlob(repo: Repository, blob: Descriptor, options: BlobStreamOptions = {}): Readable {
  return Readable.from(verifiedChunks(repo, blob, options), { objectMode: false, highWaterMark: READ_AHEAD_BYTES });
}

async function* verifiedChunks(repo: Repository, blob: Descriptor, { signal, onBytes }: BlobStreamOptions): AsyncGenerator<Uint8Array> {
  const [algorithm] = blob.digest.split(':') as [string];
  const hash = createHash(algorithm);
  let received = 0;
  let resumes = 0;
  // The last chunk is held back until the digest checks out, so an extractor never reaches the end of a
  // tampered blob (and its own checksum error) before the digest mismatch is known.
  let held: Uint8Array | null = null;
  for (;;) {
    let failure: unknown = null;
    const response = await requestFrom(repo, blob, received, signal);
    // A registry that ignores Range resends from the start: skip what we already have.
    let skip = received > 0 && response.status === 200 ? received : 0;
    try {
      for await (const chunk of bodyChunks(response)) {
        let bytes: Uint8Array = chunk;
        if (skip > 0) {
          const dropped = Math.min(skip, bytes.byteLength);
          skip -= dropped;
          bytes = bytes.subarray(dropped);
          if (bytes.byteLength === 0) continue;
        }
        received += bytes.byteLength;
        if (received > blob.size) {
          throw new HangarError('bad-input', `${repo.label}: blob ${blob.digest} is larger than the ${blob.size} bytes its manifest declares`);
        }
        hash.update(bytes);
        onBytes?.(bytes.byteLength);
        if (held) yield held;
        held = bytes;
      }
    } catch (err) {
      if (err instanceof HangarError || signal?.aborted) throw err;
      failure = err;
    }
    if (received === blob.size) break;
    if (++resumes > MAX_RESUMES) {
      const why = failure ? describe(failure) : 'the connection closed early';
      throw new HangarError('failed', `${repo.label}: download of blob ${blob.digest} failed after ${MAX_RESUMES} resumes: ${why}`);
    }
  }
  const actual = `${algorithm}:${hash.digest('hex')}`;
  if (actual !== blob.digest) {
    throw new HangarError('bad-input', `${repo.label}: blob ${blob.digest} failed digest verification (got ${actual})`);
  }
  if (held) yield held;
}

async function requestFrom(repo: Repository, blob: Descriptor, offset: number, signal: AbortSignal | undefined): Promise<Response> {
  const headers: Record<string, string> = offset > 0 ? { range: `bytes=${offset}-` } : {};
  const response = await repo.request(`/blobs/${blob.digest}`, { headers, signal });
  if (response.ok && response.body) {
    if (response.status !== 206 || response.headers.get('content-range')?.startsWith(`bytes ${offset}-`)) return response;
    await discard(response);
    throw new HangarError('failed', `${repo.label}: the registry resumed blob ${blob.digest} at the wrong offset`);
  }
  await discard(response);
  if (response.status === 404) {
    throw new HangarError('not-found', `${repo.label}: blob ${blob.digest} is missing from ${repo.ref.registry}/${repo.ref.repository}`);
  }
  throw new HangarError('failed', `${repo.label}: the registry answered HTTP ${response.status} for blob ${blob.digest}`);
}
