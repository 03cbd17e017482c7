// Fetches one LocalAI release into a directory: its checksums file first (no checksum for this machine's binary, no
// download), then the binary, hashed while it streams to a temporary file, renamed into place only when its sha256 is
// the one the release lists. A refused release leaves nothing behind.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { chmod, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HangarError } from '../../../shared/errors.ts';
import { checksumOf, type ReleaseFiles } from './release.ts';

const CHECKSUMS_MAX_BYTES = 1024 * 1024;
/**
 * The most a LocalAI binary may be: its releases' single binaries have stayed well under a gigabyte or two; a source
 * that sends more (a wrong asset, a hostile mirror) is cut off rather than left to fill the disk.
 */
export const BINARY_MAX_BYTES = 4 * 1024 ** 3;

export interface DownloadedBuild {
  tag: string;
  path: string;
  sha256: string;
}

/** Downloads `files` into `dir` as `local-ai-vX.Y.Z`, executable; `progress` is told the bytes as they come. */
export async function downloadRelease(
  files: ReleaseFiles,
  dir: string,
  fetchFn: typeof fetch,
  progress: (bytes: number, total: number | null) => void = () => undefined,
  maxBytes = BINARY_MAX_BYTES,
): Promise<DownloadedBuild> {
  const expected = await expectedChecksum(files, fetchFn);
  const response = await ok(fetchFn, files.binaryUrl, 'the LocalAI binary');
  const total = Number(response.headers.get('content-length')) || null;
  const tooBig = () => new HangarError('failed', `refused LocalAI ${files.tag}: ${files.asset} is over ${maxBytes.toLocaleString('en')} bytes, more than a LocalAI binary is; nothing was installed`);
  if (total !== null && total > maxBytes) {
    await response.body?.cancel();
    throw tooBig();
  }
  const path = join(dir, `local-ai-${files.tag}`);
  const temp = `${path}.${process.pid}.download`;
  const hash = createHash('sha256');
  let bytes = 0;
  const hashing = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      if (bytes > maxBytes) return done(tooBig());
      hash.update(chunk);
      progress(bytes, total);
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(response.body! as import('node:stream/web').ReadableStream), hashing, createWriteStream(temp, { mode: 0o600 }));
    const actual = hash.digest('hex');
    if (actual !== expected) {
      throw new HangarError('failed', `refused LocalAI ${files.tag}: ${files.asset} has sha256 ${actual}, but ${files.checksumsUrl} lists ${expected}; nothing was installed`);
    }
    await chmod(temp, 0o755);
    await rename(temp, path);
    return { tag: files.tag, path, sha256: actual };
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** The sha256 the release lists for this machine's binary; a release without one is refused. */
async function expectedChecksum(files: ReleaseFiles, fetchFn: typeof fetch): Promise<string> {
  const refused = (why: string) => new HangarError('failed', `refused LocalAI ${files.tag}: ${why}; nothing was installed (Hangar never installs a binary it cannot check)`);
  let text: string;
  try {
    const response = await ok(fetchFn, files.checksumsUrl, 'its checksums file');
    text = await capped(response, CHECKSUMS_MAX_BYTES);
  } catch (error) {
    throw refused((error as Error).message);
  }
  const sha = checksumOf(text, files.asset);
  if (!sha) throw refused(`${files.checksumsUrl} lists no sha256 for ${files.asset}`);
  return sha;
}

async function ok(fetchFn: typeof fetch, url: string, what: string): Promise<Response> {
  const response = await fetchFn(url, { redirect: 'follow' });
  if (response.ok && response.body) return response;
  await response.body?.cancel();
  throw new HangarError(response.status === 404 ? 'not-found' : 'failed', `${what} ${url} answered ${response.status}`);
}

async function capped(response: Response, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = response.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw new HangarError('bad-input', `${response.url} is over ${max / 1024} KiB, not a checksums file`);
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks).toString('utf8');
}
