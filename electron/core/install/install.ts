// The install path for one backend: stage -> fetch (verified, safely extracted) -> validate -> metadata, then the
// swap. Fetching needs no lock (each fetch has its own staging dir); only the swap touches the live tree. On any
// failure the staging dir is removed, the live tree is untouched, and the error names the backend.
import type { ExtractLimits } from './limits.ts';
import { localaiTimestamp, type BackendMetadata } from './metadata.ts';
import type { FetchContext, SourceFactory, SourceOptions } from './source.ts';
import { fetchFromFirst } from './builtin-sources.ts';
import { backendError, type BackendStore, type PendingSwap, type SwapHooks } from './store.ts';

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
  limits?: ExtractLimits;
  /** The Hangar home, which no local source may copy. */
  home?: string;
  onPhase?(phase: 'fetching' | 'verifying' | 'swapping'): void;
}

/** A verified tree with its metadata.json, ready to swap in. */
export interface StagedBackend {
  name: string;
  metadata: BackendMetadata;
  /** Swaps it in; the caller settles or undoes the swap. */
  commit(hooks?: SwapHooks): Promise<PendingSwap>;
  discard(): Promise<void>;
}

export async function stageBackend(store: BackendStore, request: InstallRequest): Promise<StagedBackend> {
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
      ...(request.limits !== undefined && { limits: request.limits }),
      ...(request.home !== undefined && { home: request.home }),
      backendsDir: store.dir,
      ...(request.sha256 !== undefined && { sha256: request.sha256 }),
    });
    phase('verifying');
    await store.validate(name, staged);
    const metadata: BackendMetadata = {
      name,
      alias: request.details?.alias ?? null,
      metaBackendFor: null,
      galleryUrl: request.details?.galleryUrl ?? null,
      installedAt: localaiTimestamp(),
      version: request.details?.version ?? null,
      uri: request.uris[0] ?? fetched.servedBy, // LocalAI records the entry's own uri even when a mirror served it
      digest: fetched.digest,
      sha256: fetched.sha256,
    };
    await store.writeMetadata(staged, metadata);
    signal.throwIfAborted();
    return {
      name,
      metadata,
      commit: async (hooks) => {
        phase('swapping');
        try {
          return await store.commit(name, staged, hooks);
        } catch (err) {
          await store.discard(staged);
          throw backendError(name, err);
        }
      },
      discard: () => store.discard(staged),
    };
  } catch (err) {
    await store.discard(staged);
    throw backendError(name, err);
  }
}

/** Stage, swap and settle in one go, for callers with no processes to check in between. */
export async function installBackend(store: BackendStore, request: InstallRequest & { hooks?: SwapHooks }): Promise<BackendMetadata> {
  const staged = await stageBackend(store, request);
  await (await staged.commit(request.hooks)).settle();
  return staged.metadata;
}
