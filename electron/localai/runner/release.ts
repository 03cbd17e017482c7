// LocalAI's releases as its own launcher fetches them (cmd/launcher/internal/release_manager.go): the binary
// `local-ai-vX.Y.Z-<goos>-<goarch>` and `LocalAI-vX.Y.Z-checksums.txt` (sha256sum lines) under
// `BASE/mudler/LocalAI/releases/download/vX.Y.Z/`, and the latest release told by the redirect of
// `BASE/mudler/LocalAI/releases/latest` to `.../releases/tag/vX.Y.Z` (api.github.com would be rate-limited).
import { HangarError } from '../../../shared/errors.ts';
import { DownloadError } from '../../core/net/index.ts';

export const DEFAULT_RELEASES = 'https://github.com';
const REPOSITORY = 'mudler/LocalAI';
const VERSION = /^v?(\d{1,4}\.\d{1,4}\.\d{1,4})$/;

/** `v3.1.0` from `3.1.0` or `v3.1.0`. */
export function releaseTag(version: string): string {
  const match = VERSION.exec(version);
  if (!match) throw new HangarError('invalid-request', `a LocalAI version looks like v3.1.0 (or latest), got ${JSON.stringify(version.slice(0, 100))}`);
  return `v${match[1]}`;
}

/** Whether release tag `a` (vX.Y.Z) is older than `b`, by its numbers. */
export function isOlder(a: string, b: string): boolean {
  const [x, y] = [a, b].map((tag) => tag.replace(/^v/, '').split('.').map(Number));
  const at = x!.findIndex((n, i) => n !== y![i]);
  return at !== -1 && x![at]! < y![at]!;
}

/** The release a typed version asks for: a tag, or null for the latest (none typed, or `latest`). */
export function wantedRelease(version: string | undefined): string | null {
  return version === undefined || version === 'latest' ? null : releaseTag(version);
}

/** Go's GOOS/GOARCH for this machine, as the release names carry them; null where LocalAI publishes no binary. */
export function releasePlatform(platform: NodeJS.Platform = process.platform, arch: string = process.arch): string | null {
  const goos = platform === 'linux' || platform === 'darwin' ? platform : null;
  const goarch = arch === 'x64' ? 'amd64' : arch === 'arm64' ? 'arm64' : null;
  return goos && goarch ? `${goos}-${goarch}` : null;
}

export interface ReleaseFiles {
  tag: string;
  /** Where releases are fetched from (BASE, `https://github.com` or a mirror). */
  source: string;
  /** Its releases page, `BASE/mudler/LocalAI/releases`, as a message names it. */
  releases: string;
  /** The binary's file name, as the checksums file lists it. */
  asset: string;
  binaryUrl: string;
  checksumsUrl: string;
}

export function releaseFiles(base: string, version: string, platform = releasePlatform()): ReleaseFiles {
  if (!platform) throw new HangarError('conflict', `LocalAI publishes no binary for ${process.platform}-${process.arch}`);
  const tag = releaseTag(version);
  const releases = `${trimmed(base)}/${REPOSITORY}/releases`;
  const dir = `${releases}/download/${tag}`;
  const asset = `local-ai-${tag}-${platform}`;
  return { tag, source: trimmed(base), releases, asset, binaryUrl: `${dir}/${asset}`, checksumsUrl: `${dir}/LocalAI-${tag}-checksums.txt` };
}

/** The latest release's tag, from where `BASE/mudler/LocalAI/releases/latest` redirects. */
/** `unreached`: what a source that cannot be reached means for the caller. */
export async function latestRelease(base: string, fetchFn: typeof fetch, signal?: AbortSignal, unreached = 'the latest LocalAI release cannot be told'): Promise<string> {
  const url = `${trimmed(base)}/${REPOSITORY}/releases/latest`;
  const response = await fetchFn(url, { redirect: 'manual', ...(signal && { signal }) }).catch((error: unknown) => {
    throw unreachable(base, error, unreached);
  });
  await response.body?.cancel();
  const location = response.headers.get('location');
  if (response.status < 300 || response.status > 399 || !location) {
    throw new HangarError('failed', `${url} answered ${response.status}${location ? '' : ' with no redirect'}: the latest LocalAI release cannot be told`);
  }
  const tag = /\/releases\/tag\/(v?\d+\.\d+\.\d+)\/?$/.exec(new URL(location, url).pathname)?.[1];
  if (!tag) throw new HangarError('failed', `${url} redirects to ${location.slice(0, 200)}, not to a release tag`);
  return releaseTag(tag);
}

/** The sha256 the checksums file gives `asset` (`HEX  NAME` lines, NAME possibly `*NAME`), or null when it lists none. */
export function checksumOf(checksums: string, asset: string): string | null {
  for (const line of checksums.split('\n')) {
    const [hash, name] = line.trim().split(/\s+/);
    if (name?.replace(/^\*/, '') === asset && /^[0-9a-f]{64}$/i.test(hash ?? '')) return hash!.toLowerCase();
  }
  return null;
}

/**
 * A release source that could not be reached at all (nothing listens, DNS, TLS): said as that, not as a release
 * refused. A cancel (or any other failure) is passed on as it is.
 */
export function unreachable(base: string, error: unknown, conclusion: string): unknown {
  if (!(error instanceof DownloadError)) return error;
  return new HangarError('failed', `cannot reach LocalAI's releases at ${trimmed(base)}: ${error.reason}; ${conclusion}`);
}

function trimmed(base: string): string {
  return base.replace(/\/+$/, '');
}
