// The whole install path for one backend: stage -> fetch (verified, safely extracted) -> validate -> metadata -> swap.
// On any failure the staging dir is removed, the live tree is untouched, and the error names the backend.
import type { BackendMetadata } from './metadata.ts';
import type { FetchContext, SourceFactory, SourceOptions } from './source.ts';
import { fetchFromFirst } from './sources.ts';
import { backendError, type BackendStore, type SwapHooks } from './store.ts';

export interface InstallRequest {
  name: string;
  /** The entry's uri first, then its mirrors. */
  uris: string[];
  sha256?: string;
  factories: SourceFactory[];
  sourceOptions: SourceOptions;
  details?: Partial<Pick<BackendMetadata, 'alias' | 'galleryUrl' | 'version'>>;
  signal?: AbortSignal;
  onProgress?: FetchContext['onProgress'];
  fetch?: typeof globalThis.fetch;
  hooks?: SwapHooks;
  onPhase?(phase: 'fetching' | 'verifying' | 'swapping'): void;
}

export async function installBackend(store: BackendStore, request: InstallRequest): Promise<BackendMetadata> {
  const { name } = request;
  const phase = request.onPhase ?? (() => undefined);
  const signal = request.signal ?? new AbortController().signal;
  phase('fetching');
  const staged = await store.stage(name);
  try {
    const fetched = await fetchFromFirst(request.uris, request.factories, request.sourceOptions, staged, {
      signal,
      onProgress: request.onProgress ?? (() => undefined),
      fetch: request.fetch ?? globalThis.fetch,
      ...(request.sha256 !== undefined && { sha256: request.sha256 }),
    });
    phase('verifying');
    await store.validate(name, staged);
    const metadata: BackendMetadata = {
      name,
      alias: request.details?.alias ?? null,
      metaBackendFor: null,
      galleryUrl: request.details?.galleryUrl ?? null,
      installedAt: new Date().toISOString(),
      version: request.details?.version ?? null,
      uri: request.uris[0] ?? fetched.servedBy, // LocalAI records the entry's own uri even when a mirror served it
      digest: fetched.digest,
      sha256: fetched.sha256,
    };
    await store.writeMetadata(staged, metadata);
    signal.throwIfAborted();
    phase('swapping');
    await store.commit(name, request.hooks);
    return metadata;
  } catch (err) {
    await store.discard(name);
    throw backendError(name, err);
  }
}
