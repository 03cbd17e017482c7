// The backend galleries of a LocalAI cluster: the frontend's own list (GET /backends/galleries), passed to workers
// verbatim as LocalAI passes it, and read by Hangar too, so a worker's upgrades are judged against the same index.
import { Galleries, type GalleryEntry, type GallerySpec } from '../core/gallery/index.ts';
import { DigestResolver, ociSource } from '../core/install/index.ts';
import type { FrontendClient, LocalAiGallery } from './frontend-client.ts';

/** LocalAI re-reads the frontend's gallery list rarely; Hangar reads it again at most this often. */
const LIST_MAX_AGE_MS = 60_000;
/** How old Hangar's copy of an index may be when it decides what an upgrade brings. */
export const INDEX_FRESH_MS = 5_000;
/** Read again in the background once this old, as LocalAI's frontend re-reads its own (hourly); `--refresh` now. */
const INDEX_MAX_AGE_MS = 60 * 60_000;
const DIGEST_TTL_MS = 6 * 60 * 60_000;

export class ClusterGalleries {
  private readonly galleries = new Galleries({ specs: [] });
  private readonly digests = new DigestResolver({ fetch: globalThis.fetch, ttlMs: DIGEST_TTL_MS });
  private listed: { json: string; at: number; key: string } | null = null;
  private indexAt = 0;
  private listing: Promise<void> | null = null;

  constructor(private readonly frontend: FrontendClient) {}

  /** The galleries as JSON, exactly as the frontend gave them: what `backend_galleries` carries. */
  async json(): Promise<string> {
    await this.list();
    return this.listed!.json;
  }

  names(): string[] {
    return this.galleries.names();
  }

  async entries(): Promise<GalleryEntry[]> {
    await this.list();
    if (Date.now() - this.indexAt > INDEX_MAX_AGE_MS) void this.refresh(INDEX_MAX_AGE_MS).catch(() => undefined);
    return this.galleries.entries();
  }

  async byName(name: string): Promise<GalleryEntry | null> {
    await this.list();
    return this.galleries.byName(name);
  }

  problems(): { gallery: string; message: string }[] {
    return this.galleries.problems();
  }

  /** Reads every index again unless it was read within `maxAgeMs` (0: always), and forgets cached digests. */
  async refresh(maxAgeMs = 0): Promise<void> {
    await this.list(maxAgeMs === 0);
    if (Date.now() - this.indexAt < maxAgeMs) return;
    this.indexAt = Date.now();
    this.digests.refresh();
    await this.galleries.refresh();
  }

  isOci(uri: string): boolean {
    return ociSource.matches(uri);
  }

  /** The tag's digest now, or null when it cannot tell. */
  async remoteDigest(uri: string): Promise<string | null> {
    return this.digests.current(uri).catch(() => null);
  }

  close(): void {
    this.galleries.close();
  }

  private async list(force = false): Promise<void> {
    if (!force && this.listed && Date.now() - this.listed.at < LIST_MAX_AGE_MS) return;
    this.listing ??= (async () => {
      const { galleries, json } = await this.frontend.galleries();
      const specs = galleries.flatMap(specOf);
      const key = JSON.stringify(specs);
      if (key !== this.listed?.key) {
        this.galleries.reconfigure(specs);
        this.indexAt = Date.now();
      }
      this.listed = { json, at: Date.now(), key };
    })().finally(() => (this.listing = null));
    await this.listing;
  }
}

/**
 * Where Hangar reads a LocalAI gallery: http(s) as it is, LocalAI's `github:ORG/REPO/PATH@BRANCH` shorthand as the
 * raw file it stands for (branch `main` when none is given), `file://` as a path (readable only on the frontend's
 * own machine). A gallery Hangar cannot read is left out: the worker still gets it.
 */
export function specOf(gallery: LocalAiGallery): GallerySpec[] {
  const name = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(gallery.name) ? gallery.name : undefined;
  const location = readableLocation(gallery.url);
  return location === null ? [] : [{ ...(name && { name }), location }];
}

function readableLocation(url: string): string | null {
  if (/^(https?|file):\/\//i.test(url)) return url;
  const github = /^github:(?:\/\/)?([^/@]+)\/([^/@]+)\/([^@]+?)(?:@(.+))?$/.exec(url);
  if (github) {
    const [, org, repo, path, branch] = github;
    return `https://raw.githubusercontent.com/${org}/${repo}/${branch ?? 'main'}/${path}`;
  }
  return null;
}
