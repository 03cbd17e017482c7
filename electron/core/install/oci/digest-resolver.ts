// Upgrade checks: the digest a tag currently points at (the index for a multi-platform image, as LocalAI's
// HEAD of the tag reports it, pkg/oci/image.go GetImageDigest), cached for a while.
import { HangarError } from '../../../../shared/errors.ts';
import { dockerConfigCredentials, type CredentialLookup } from './credentials.ts';
import { tagDigest } from './manifest.ts';
import { isOciReference, parseReference } from './reference.ts';
import { AuthCache, Repository } from './repository.ts';

const SIX_HOURS = 6 * 60 * 60 * 1000;

export interface DigestResolverOptions {
  fetch: typeof globalThis.fetch;
  ttlMs?: number;
  dockerConfigPath?: string;
}

export class DigestResolver {
  private readonly fetch: typeof globalThis.fetch;
  private readonly ttlMs: number;
  private readonly credentials: CredentialLookup;
  private readonly authCache = new AuthCache();
  private readonly cache = new Map<string, { digest: Promise<string | null>; at: number }>();

  constructor({ fetch, ttlMs = SIX_HOURS, dockerConfigPath }: DigestResolverOptions) {
    this.fetch = fetch;
    this.ttlMs = ttlMs;
    this.credentials = dockerConfigCredentials(dockerConfigPath);
  }

  /**
   * The tag's digest, or null when `ref` is not an OCI reference or the registry has no such tag. Other failures (network, login) reject and are not cached.
   */
  current(ref: string): Promise<string | null> {
    const cached = this.cache.get(ref);
    if (cached && Date.now() - cached.at < this.ttlMs) return cached.digest;
    const digest = this.resolve(ref);
    this.cache.set(ref, { digest, at: Date.now() });
    digest.catch(() => {
      if (this.cache.get(ref)?.digest === digest) this.cache.delete(ref);
    });
    return digest;
  }

  /** Forgets every cached digest, so the next `current` asks the registry. */
  refresh(): void {
    this.cache.clear();
    this.generation++;
  }

  /** Bumped whenever cached digests are forgotten: what was computed from them is out of date. */
  generation = 0;

  /** Until when the digest `current(ref)` gave is kept; 0 when none is kept (not asked yet, or the ask failed). */
  keptUntil(ref: string): number {
    const cached = this.cache.get(ref);
    return cached ? cached.at + this.ttlMs : 0;
  }

  private async resolve(ref: string): Promise<string | null> {
    if (!isOciReference(ref)) return null;
    const repo = new Repository(parseReference(ref), ref, { fetch: this.fetch, credentials: this.credentials, authCache: this.authCache });
    try {
      return await tagDigest(repo);
    } catch (err) {
      if (err instanceof HangarError && err.code === 'not-found') return null;
      throw err;
    }
  }
}
