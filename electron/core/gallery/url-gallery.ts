// A gallery index served over http(s). Fetched on first use, kept in memory, fetched again on refresh().
// A failed refresh keeps serving the last good copy and reports the failure.
import { GALLERY_MAX_BYTES, mebibytes } from './parse.ts';
import type { IndexParser } from './index-parser.ts';
import { failedSnapshot, snapshotFromText, SnapshotSlot, type GallerySource, type Snapshot } from './snapshot.ts';
import { HangarError } from '../../../shared/errors.ts';
import { DownloadError, withUserInfoOf } from '../net/index.ts';
import { hidePasswords } from '../../../shared/url-password.ts';

const fetchTimeoutMs = 30_000;

/** Reads a body as text, failing as soon as it passes `limit` bytes (a server may stream forever). */
export async function readCapped(response: Response, limit: number): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > limit) throw new HangarError('bad-input', `the index is ${mebibytes(declared)}, over the ${mebibytes(limit)} limit`);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body?.getReader();
  for (let read = await reader?.read(); read && !read.done; read = await reader!.read()) {
    size += read.value.byteLength;
    if (size > limit) {
      await reader!.cancel();
      throw new HangarError('bad-input', `the index passed the ${mebibytes(limit)} limit while downloading`);
    }
    chunks.push(read.value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export class UrlGallery implements GallerySource {
  readonly location: string;
  private readonly snapshot: SnapshotSlot;
  private loading: Promise<void> | null = null;

  constructor(
    readonly name: string,
    private readonly url: string,
    private readonly fetch: typeof globalThis.fetch,
    onChange: (gallery: string) => void,
    private readonly parse?: IndexParser,
  ) {
    this.location = url;
    this.snapshot = new SnapshotSlot(() => onChange(name));
  }

  async current(): Promise<Snapshot> {
    if (!this.snapshot.value) await this.refresh();
    return this.snapshot.value!;
  }

  last(): Snapshot | null {
    return this.snapshot.value;
  }

  refresh(): Promise<void> {
    this.loading ??= this.load().finally(() => (this.loading = null));
    return this.loading;
  }

  close(): void {}

  private async load(): Promise<void> {
    let text: string;
    let baseUrl: string;
    try {
      const response = await this.fetch(this.url, { signal: AbortSignal.timeout(fetchTimeoutMs) });
      if (!response.ok) throw new HangarError('failed', `HTTP ${response.status} ${response.statusText}`.trim());
      text = await readCapped(response, GALLERY_MAX_BYTES);
      baseUrl = withUserInfoOf(this.url, response.url || this.url);
    } catch (error) {
      // A guarded fetch's error names the URL already, and this line names it too.
      const cause = error instanceof DownloadError ? error.reason : (((error as Error).cause as Error | undefined)?.message ?? (error as Error).message);
      return this.snapshot.set(`failure:${cause}`, () => failedSnapshot(`gallery "${this.name}": cannot fetch ${hidePasswords(this.url)}: ${cause}`, this.snapshot.value));
    }
    await this.snapshot.set(`text:${baseUrl}\n${text}`, () => snapshotFromText(text, { gallery: this.name, baseDir: null, baseUrl }, this.parse));
  }
}
