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
import { checksumOf, unreachable, type ReleaseFiles } from './release.ts';

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

/**
 * A release Hangar will not install: its one line shortens what it shows (a digest) so that its conclusion survives
 * any bound on a line; `full` says it whole, as the operation keeps it. `why` is the line without the release's name.
 */
export class Refused extends HangarError {
  constructor(
    readonly release: string,
    readonly why: string,
    private readonly wholeWhy: string = why,
  ) {
    super('bad-input', `refused LocalAI ${release}: ${why}`);
  }

  get full(): string {
    return `refused LocalAI ${this.release}: ${this.wholeWhy}`;
  }
}

const NEVER_UNCHECKED = 'nothing was installed (Hangar never installs a binary it cannot check)';

/** Downloads `files` into `dir` as `local-ai-vX.Y.Z`, executable; `progress` is told the bytes as they come. */
export async function downloadRelease(
  files: ReleaseFiles,
  dir: string,
  fetchFn: typeof fetch,
  progress: (bytes: number, total: number | null) => void = () => undefined,
  maxBytes = BINARY_MAX_BYTES,
  signal?: AbortSignal,
): Promise<DownloadedBuild> {
  const expected = await expectedChecksum(files, fetchFn, signal);
  const response = await ok(fetchFn, files, files.binaryUrl, 'the LocalAI binary', signal);
  const total = Number(response.headers.get('content-length')) || null;
  const tooBig = () => new Refused(files.tag, `${files.asset} is over ${maxBytes.toLocaleString('en')} bytes, more than a LocalAI binary is; nothing was installed`);
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
    await pipeline(Readable.fromWeb(response.body! as import('node:stream/web').ReadableStream), hashing, createWriteStream(temp, { mode: 0o600 }), ...(signal ? [{ signal }] : []));
    const actual = hash.digest('hex');
    if (actual !== expected) throw mismatch(files, actual, expected);
    await chmod(temp, 0o755);
    await rename(temp, path);
    return { tag: files.tag, path, sha256: actual };
  } catch (error) {
    await rm(temp, { force: true });
    throw signal?.aborted ? signal.reason : error;
  }
}

function mismatch(files: ReleaseFiles, actual: string, expected: string): Refused {
  const head = 'its sha256 is not the one its checksums file lists; nothing was installed';
  const checksums = files.checksumsUrl.slice(files.checksumsUrl.lastIndexOf('/') + 1);
  return new Refused(
    files.tag,
    `${head} (${files.asset} has ${actual.slice(0, 16)}…, ${checksums} lists ${expected.slice(0, 16)}…)`,
    `${head} (${files.asset} has sha256 ${actual}; ${files.checksumsUrl} lists ${expected})`,
  );
}

/** The sha256 the release lists for this machine's binary; a release without one is refused. */
async function expectedChecksum(files: ReleaseFiles, fetchFn: typeof fetch, signal: AbortSignal | undefined): Promise<string> {
  const refused = (why: string) => new Refused(files.tag, `${why}; ${NEVER_UNCHECKED}`);
  let response: Response;
  try {
    response = await ok(fetchFn, files, files.checksumsUrl, 'its checksums file', signal);
  } catch (error) {
    if (!(error instanceof AnsweredNotFound)) throw error;
    // No checksums file: a release that has no binary for this machine either is no release at all.
    if (!(await binaryThere(fetchFn, files, signal))) throw new HangarError('not-found', `there is no LocalAI release ${files.tag} at ${files.releases}; nothing was installed`);
    throw refused(error.message);
  }
  const sha = checksumOf(await capped(response, CHECKSUMS_MAX_BYTES), files.asset);
  if (!sha) throw refused(`its checksums file lists no sha256 for ${files.asset}`);
  return sha;
}

class AnsweredNotFound extends HangarError {
  constructor(message: string) {
    super('not-found', message);
  }
}

async function ok(fetchFn: typeof fetch, files: ReleaseFiles, url: string, what: string, signal: AbortSignal | undefined): Promise<Response> {
  const response = await fetchFn(url, { redirect: 'follow', ...(signal && { signal }) }).catch((error: unknown) => {
    throw unreachable(files.source, error, 'nothing was installed');
  });
  if (response.ok && response.body) return response;
  await response.body?.cancel();
  if (response.status === 404) throw new AnsweredNotFound(`${what} ${url} answered 404`);
  throw new HangarError('failed', `LocalAI ${files.tag}: ${what} ${url} answered ${response.status}; nothing was installed`);
}

/** Whether the release has a binary for this machine (HEAD, nothing downloaded). */
async function binaryThere(fetchFn: typeof fetch, files: ReleaseFiles, signal: AbortSignal | undefined): Promise<boolean> {
  const response = await fetchFn(files.binaryUrl, { method: 'HEAD', redirect: 'follow', ...(signal && { signal }) }).catch((error: unknown) => {
    throw unreachable(files.source, error, 'nothing was installed');
  });
  await response.body?.cancel();
  return response.status !== 404;
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
