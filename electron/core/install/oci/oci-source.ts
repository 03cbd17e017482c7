// The OCI registry source: pulls this platform's image and applies its layers, in order and with whiteouts,
// into the staging directory. Every layer is digest-checked as it streams; a mismatch fails the whole fetch,
// and since only staging was written, the live backend is untouched.
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { HangarError } from '../../../../shared/errors.ts';
import { extractArchive } from '../extract.ts';
import { DEFAULT_LIMITS, sizeText, TreeTally } from '../limits.ts';
import type { BackendSource, FetchContext, FetchResult, SourceFactory } from '../source.ts';
import { openVerifiedBlob } from './blob.ts';
import { dockerConfigCredentials, type CredentialLookup } from './credentials.ts';
import { fetchPlatformManifest, type Descriptor } from './manifest.ts';
import { hostPlatform, type Platform } from './platform.ts';
import { isOciReference, parseReference } from './reference.ts';
import { AuthCache, Repository } from './repository.ts';

const LAYER_TYPES = new Set([
  'application/vnd.oci.image.layer.v1.tar',
  'application/vnd.oci.image.layer.v1.tar+gzip',
  'application/vnd.docker.image.rootfs.diff.tar',
  'application/vnd.docker.image.rootfs.diff.tar.gzip',
]);

export interface OciSourceOptions {
  /** Docker config.json to read credentials from (default: $DOCKER_CONFIG/config.json or ~/.docker/config.json). */
  dockerConfigPath?: string;
  /** Platform to pull (default: this machine). */
  platform?: Platform;
}

export function createOciSource(options: OciSourceOptions = {}): SourceFactory {
  const credentials = dockerConfigCredentials(options.dockerConfigPath);
  const authCache = new AuthCache();
  const platform = options.platform ?? hostPlatform();
  return {
    matches: isOciReference,
    create: (uri) => new OciSource(uri, { credentials, authCache, platform }),
  };
}

export const ociSource: SourceFactory = createOciSource();

class OciSource implements BackendSource {
  constructor(
    readonly uri: string,
    private readonly shared: { credentials: CredentialLookup; authCache: AuthCache; platform: Platform },
  ) {}

  async fetchInto(stagingDir: string, ctx: FetchContext): Promise<FetchResult> {
    const repo = new Repository(parseReference(this.uri), this.uri, {
      fetch: ctx.fetch,
      credentials: this.shared.credentials,
      authCache: this.shared.authCache,
    });
    const { tagDigest, manifest } = await fetchPlatformManifest(repo, this.shared.platform, ctx.signal);
    for (const layer of manifest.layers) checkLayerType(layer, this.uri);

    const total = manifest.layers.reduce((sum, layer) => sum + layer.size, 0);
    const tally = new TreeTally('image', ctx.limits ?? DEFAULT_LIMITS);
    if (total > tally.limits.maxBytes) {
      throw new HangarError('bad-input', `${this.uri}: its layers are larger than ${sizeText(tally.limits.maxBytes)}, the install size limit`);
    }
    let downloaded = 0;
    ctx.onProgress(0, total);
    for (const layer of manifest.layers) {
      const blob = openVerifiedBlob(repo, layer, {
        signal: ctx.signal,
        onBytes: (n) => ctx.onProgress((downloaded += n), total),
      });
      await extractLayer(blob, stagingDir, tally, ctx.signal);
    }
    return { sha256: null, digest: tagDigest, servedBy: this.uri };
  }
}

function checkLayerType(layer: Descriptor, uri: string): void {
  if (!LAYER_TYPES.has(layer.mediaType)) {
    throw new HangarError('bad-input', `${uri}: unsupported layer media type ${layer.mediaType}`);
  }
}

/**
 * The blob's own error (digest, size, network) explains a failure better than what the extractor saw of it. An
 * extractor that stops at the tar end marker leaves trailing bytes unread; they are drained so the digest is
 * still checked over the whole blob.
 */
async function extractLayer(blob: Readable, stagingDir: string, tally: TreeTally, signal: AbortSignal): Promise<void> {
  let blobError: unknown = null;
  blob.once('error', (err) => (blobError = err));
  try {
    await extractArchive(blob, stagingDir, { whiteouts: true, tally, signal });
    blob.resume();
    await finished(blob);
  } catch (err) {
    throw blobError ?? err;
  } finally {
    blob.destroy();
  }
}
