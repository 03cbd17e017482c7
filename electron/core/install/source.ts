// The source interface: where a backend's tree comes from. Each kind of `uri` (local dir, tarball, http, OCI)
// is one SourceFactory; adding a kind adds a factory and touches nothing else.
import type { ExtractLimits } from './limits.ts';

export interface FetchContext {
  signal: AbortSignal;
  /** Called as bytes arrive; totalBytes is null until known. */
  onProgress(bytes: number, totalBytes: number | null): void;
  /** The gallery's expected sha256 of the downloaded artifact, if it gives one. */
  sha256?: string;
  fetch: typeof globalThis.fetch;
  /** What the whole tree may hold, whichever source it comes from (default: DEFAULT_LIMITS). */
  limits?: ExtractLimits;
  /** The Hangar home: a local source may be neither it nor a directory that contains it. */
  home?: string;
  /** The backends directory (staging lives in it): a local source may not be it, hold it, or lie inside it. */
  backendsDir?: string;
}

export interface FetchResult {
  /** sha256 of the artifact as fetched (tarballs), or null when not applicable (directories). */
  sha256: string | null;
  /** Content digest (the OCI tag's digest: the index for a multi-platform image, as LocalAI records it), or null. */
  digest: string | null;
  /** The uri that actually served the tree (differs from the entry's uri when a mirror served it). */
  servedBy: string;
}

export interface BackendSource {
  readonly uri: string;
  /** Fills the empty directory `stagingDir` with the backend's tree. Never writes outside it. */
  fetchInto(stagingDir: string, ctx: FetchContext): Promise<FetchResult>;
}

export interface SourceOptions {
  /** Directory that a relative uri resolves against (the gallery index file's folder), or null for remote indexes. */
  baseDir: string | null;
  /** Base URL that a relative uri resolves against when the index came over http(s). */
  baseUrl: string | null;
}

export interface SourceFactory {
  /** Reads this machine's files: only galleries that are themselves local may name such a source. */
  readonly local?: boolean;
  matches(uri: string): boolean;
  create(uri: string, options: SourceOptions): BackendSource;
}
