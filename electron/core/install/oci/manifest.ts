// Manifests: negotiation (OCI and Docker v2, single and multi-platform), digest checks, platform selection.
import { createHash } from 'node:crypto';
import { HangarError } from '../../../../shared/errors.ts';
import { formatPlatform, selectPlatform, type Platform } from './platform.ts';
import { bodyChunks, discard, type Repository } from './repository.ts';

export const MEDIA_TYPES = {
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
} as const;

const ACCEPT = [MEDIA_TYPES.ociIndex, MEDIA_TYPES.ociManifest, MEDIA_TYPES.dockerList, MEDIA_TYPES.dockerManifest].join(', ');
const INDEX_TYPES = new Set<string>([MEDIA_TYPES.ociIndex, MEDIA_TYPES.dockerList]);
const MANIFEST_TYPES = new Set<string>([MEDIA_TYPES.ociManifest, MEDIA_TYPES.dockerManifest]);
/** The distribution spec lets registries refuse larger manifests; we refuse them too rather than buffer blindly. */
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
/** Digests end up in request paths, so only well-formed ones are accepted. */
const DIGEST = /^(?:sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$/;

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: Platform;
}

export interface ImageManifest {
  mediaType: string;
  layers: Descriptor[];
}

interface IndexManifest {
  mediaType: string;
  manifests: Descriptor[];
}

type Fetched = { digest: string; document: ImageManifest | IndexManifest };

/** Fetches a manifest or index by tag or digest; a digest reference is verified against the bytes served. */
export async function fetchManifest(repo: Repository, reference: string, signal?: AbortSignal): Promise<Fetched> {
  const response = await repo.request(`/manifests/${reference}`, { headers: { accept: ACCEPT }, signal });
  if (response.status === 404) {
    await discard(response);
    throw new HangarError('not-found', `${repo.label}: manifest ${reference} not found in ${repo.ref.registry}/${repo.ref.repository}`);
  }
  if (!response.ok) {
    await discard(response);
    throw new HangarError('failed', `${repo.label}: the registry answered HTTP ${response.status} for manifest ${reference}`);
  }
  const bytes = await readBounded(response, MAX_MANIFEST_BYTES, repo.label);
  const digest = reference.includes(':') ? reference : `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  if (reference.includes(':')) verifyDigest(bytes, reference, repo.label);
  return { digest, document: parseManifest(bytes, response.headers.get('content-type'), repo.label) };
}

/** The digest of what the reference itself names: the index for a multi-platform image (what LocalAI records). */
export async function tagDigest(repo: Repository, signal?: AbortSignal): Promise<string> {
  return (await fetchManifest(repo, referenceOf(repo), signal)).digest;
}

function referenceOf(repo: Repository): string {
  return repo.ref.digest ?? repo.ref.tag ?? 'latest';
}

/**
 * The manifest digest for `platform` at the reference: the index entry's digest for a multi-platform image, the
 * manifest's own digest otherwise; `tagDigest` is the digest of the reference's own manifest or index.
 * `manifest` is filled when it was already fetched on the way.
 */
async function resolvePlatform(
  repo: Repository,
  platform: Platform,
  signal?: AbortSignal,
): Promise<{ digest: string; tagDigest: string; manifest: ImageManifest | null }> {
  const fetched = await fetchManifest(repo, referenceOf(repo), signal);
  if ('layers' in fetched.document) return { digest: fetched.digest, tagDigest: fetched.digest, manifest: fetched.document };
  const entries = fetched.document.manifests.filter((m) => MANIFEST_TYPES.has(m.mediaType));
  const chosen = selectPlatform(entries, platform);
  if (!chosen) {
    const offered = entries.flatMap((m) => (m.platform ? [formatPlatform(m.platform)] : []));
    throw new HangarError(
      'not-found',
      `${repo.label}: no image for ${formatPlatform(platform)} (the registry offers ${offered.length ? offered.join(', ') : 'no platforms'})`,
    );
  }
  return { digest: chosen.digest, tagDigest: fetched.digest, manifest: null };
}

/** The image manifest for `platform`, following an index to the platform's entry. */
export async function fetchPlatformManifest(
  repo: Repository,
  platform: Platform,
  signal?: AbortSignal,
): Promise<{ digest: string; tagDigest: string; manifest: ImageManifest }> {
  const resolved = await resolvePlatform(repo, platform, signal);
  if (resolved.manifest) return { digest: resolved.digest, tagDigest: resolved.tagDigest, manifest: resolved.manifest };
  const fetched = await fetchManifest(repo, resolved.digest, signal);
  if (!('layers' in fetched.document)) {
    throw new HangarError('bad-input', `${repo.label}: index entry ${resolved.digest} is itself an index, not an image`);
  }
  return { digest: resolved.digest, tagDigest: resolved.tagDigest, manifest: fetched.document };
}

function verifyDigest(bytes: Buffer, digest: string, label: string): void {
  const [algorithm, expected] = digest.split(':') as [string, string];
  if (algorithm !== 'sha256' && algorithm !== 'sha512') {
    throw new HangarError('bad-input', `${label}: unsupported digest algorithm in ${digest}`);
  }
  const actual = createHash(algorithm).update(bytes).digest('hex');
  if (actual !== expected) {
    throw new HangarError('bad-input', `${label}: manifest ${digest} failed digest verification (got ${algorithm}:${actual})`);
  }
}

function parseManifest(bytes: Buffer, contentType: string | null, label: string): ImageManifest | IndexManifest {
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  } catch {
    throw new HangarError('bad-input', `${label}: the registry served a manifest that is not JSON`);
  }
  if (doc['schemaVersion'] !== 2) {
    throw new HangarError('bad-input', `${label}: unsupported manifest schema version ${String(doc['schemaVersion'])}`);
  }
  const mediaType = typeof doc['mediaType'] === 'string' ? doc['mediaType'] : (contentType?.split(';')[0]?.trim() ?? '');
  if (Array.isArray(doc['manifests']) && (INDEX_TYPES.has(mediaType) || !MANIFEST_TYPES.has(mediaType))) {
    return { mediaType, manifests: doc['manifests'].map((d) => descriptor(d, label)) };
  }
  if (Array.isArray(doc['layers'])) {
    return { mediaType, layers: doc['layers'].map((d) => descriptor(d, label)) };
  }
  throw new HangarError('bad-input', `${label}: unsupported manifest media type ${mediaType || '(none)'}`);
}

function descriptor(value: unknown, label: string): Descriptor {
  const d = value as Partial<Descriptor> | null;
  const wellFormed =
    d && typeof d.mediaType === 'string' && typeof d.digest === 'string' && DIGEST.test(d.digest) && Number.isSafeInteger(d.size) && d.size! >= 0;
  if (!wellFormed) {
    throw new HangarError('bad-input', `${label}: the manifest has a malformed descriptor`);
  }
  return d as Descriptor;
}

async function readBounded(response: Response, max: number, label: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of bodyChunks(response)) {
    total += chunk.byteLength;
    if (total > max) {
      throw new HangarError('bad-input', `${label}: manifest larger than ${max} bytes`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}
