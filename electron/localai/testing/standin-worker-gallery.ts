// The stand-in worker's gallery installs, written from LocalAI's code (core/gallery/gallery.go's index cache,
// backends.go's InstallBackendFromGallery and writeBackendMetadata, core/services/nodes/install_progress_publisher.go):
// the index kept an hour, so an upgrade right after a gallery change reinstalls the old version; a meta resolved by the
// worker's capability; the artifact downloaded with debounced progress events (the last one flushed right before the
// reply); `<backends>/<name>/` written with metadata.json. What it installs is a real gRPC backend (the echo backend the
// build writes to dist/backends/echo; the downloaded bytes stand for its image). Errors read as LocalAI's inner ones:
// the worker says whether it was installing or upgrading.
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { parse } from 'yaml';
import { localaiTimestamp } from '../../core/install/metadata.ts';
import { formatLocalAiSize, sanitizeSubjectToken, type InstallRequest } from '../protocol.ts';

export interface WorkerGalleryOptions {
  backendsDir: string;
  /** The galleries used when a request names none (the worker's own LOCALAI_BACKEND_GALLERIES). */
  galleries?: { url: string; name: string }[];
  capability?: string;
  /** How long a gallery index is kept (LocalAI: one hour). */
  indexCacheMs?: number;
}

/** LocalAI's leading-edge debounce for progress events. */
const PROGRESS_DEBOUNCE_MS = 250;
const INDEX_CACHE_MS = 60 * 60_000;
/** The real gRPC backend every install puts in place (built by `npm run build`). */
const BACKEND_SOURCE = resolve('dist/backends/echo');

export class WorkerGallery {
  private readonly indexCache = new Map<string, { text: string; at: number }>();
  private downloadFailure: string | null = null;

  constructor(private readonly options: WorkerGalleryOptions) {}

  /** Every download fails with `reason` from now on, as from a registry that refuses the pull; null: they work again. */
  failDownloads(reason: string | null): void {
    this.downloadFailure = reason;
  }

  /** InstallBackendFromGallery: the index (cached an hour), the entry (a meta resolved by the capability), the download. */
  async install(body: InstallRequest, publisher: ProgressPublisher | null): Promise<void> {
    try {
      const galleries = body.backend_galleries ? (JSON.parse(body.backend_galleries) as { url: string; name: string }[]) : (this.options.galleries ?? []);
      const found = await this.findEntry(galleries, body.backend);
      if (!found) throw new Error(`no backend found with name "${body.backend}"`);
      const { entry } = found;
      if (!entry.capabilities) return await this.download(entry, found.gallery, publisher);
      const capability = this.options.capability ?? 'default';
      const build = entry.capabilities[capability] ?? entry.capabilities.default ?? entry.capabilities.cpu;
      const concrete = build ? await this.findEntry(galleries, build) : null;
      if (!concrete) throw new Error(`no backend found with capabilities ${JSON.stringify(entry.capabilities)}`);
      await this.download(concrete.entry, concrete.gallery, publisher);
      await this.writeBackend(entry.name, { name: entry.name, meta_backend_for: concrete.entry.name, gallery_url: found.gallery.url, installed_at: localaiTimestamp(), version: concrete.entry.version }, false);
    } finally {
      publisher?.flush();
    }
  }

  private async findEntry(galleries: { url: string; name: string }[], name: string): Promise<{ entry: IndexEntry; gallery: { url: string; name: string } } | null> {
    for (const gallery of galleries) {
      const cacheKey = `${gallery.name}-${gallery.url}`;
      let cached = this.indexCache.get(cacheKey);
      if (!cached || Date.now() - cached.at > (this.options.indexCacheMs ?? INDEX_CACHE_MS)) {
        const response = await fetch(gallery.url);
        if (!response.ok) throw new Error(`failed to read gallery elements: HTTP ${response.status}`);
        cached = { text: await response.text(), at: Date.now() };
        this.indexCache.set(cacheKey, cached);
      }
      const entry = ((parse(cached.text) as IndexEntry[] | null) ?? []).find((e) => e.name.toLowerCase() === name.toLowerCase());
      if (entry) return { entry, gallery };
    }
    return null;
  }

  /** Streams the artifact, publishing LocalAI's progress events (leading-edge debounce, the last one flushed). */
  private async download(entry: IndexEntry, gallery: { url: string; name: string }, publisher: ProgressPublisher | null): Promise<void> {
    const failed = (reason: string) => new Error(`failed to download backend "${entry.uri}": ${reason}`);
    if (this.downloadFailure !== null) throw failed(this.downloadFailure);
    const response = await fetch(entry.uri!);
    if (!response.ok || !response.body) throw failed(`HTTP ${response.status}`);
    const total = Number(response.headers.get('content-length')) || 0;
    let written = 0;
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      written += chunk.byteLength;
      if (total > 0) publisher?.tick(entry.uri!, formatLocalAiSize(written), formatLocalAiSize(total), (written / total) * 100);
    }
    await this.writeBackend(entry.name, { name: entry.name, gallery_url: gallery.url, installed_at: localaiTimestamp(), version: entry.version, uri: entry.uri }, true);
  }

  private async writeBackend(name: string, md: Record<string, string | undefined>, runnable: boolean): Promise<void> {
    const dir = join(this.options.backendsDir, name);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true, mode: 0o750 });
    if (runnable) {
      for (const file of ['run.sh', 'server.cjs']) await cp(join(BACKEND_SOURCE, file), join(dir, file));
      // The echo backend names this in its LoadModel reply: the version the worker installed.
      await writeFile(join(dir, 'VERSION'), `${md.version ?? 'none'}\n`);
    }
    const keys = ['alias', 'meta_backend_for', 'name', 'gallery_url', 'installed_at', 'version', 'uri', 'digest'];
    const ordered = Object.fromEntries(keys.filter((k) => md[k]).map((k) => [k, md[k]]));
    await writeFile(join(dir, 'metadata.json'), JSON.stringify(ordered, null, 2));
  }
}

interface IndexEntry {
  name: string;
  uri?: string;
  version?: string;
  capabilities?: Record<string, string>;
}

/** LocalAI's DebouncedInstallProgressPublisher: the first tick at once, then at most one per window, the last on flush. */
export class ProgressPublisher {
  private last = 0;
  private pending: object | null = null;
  private timer: NodeJS.Timeout | undefined;
  private readonly subject: string;

  constructor(
    private readonly nc: NatsConnection,
    private readonly nodeId: string,
    private readonly opId: string,
    private readonly backend: string,
  ) {
    this.subject = `nodes.${sanitizeSubjectToken(nodeId)}.backend.install.${sanitizeSubjectToken(opId)}.progress`;
  }

  tick(file: string, current: string, total: string, percentage: number): void {
    const event = { op_id: this.opId, node_id: this.nodeId, backend: this.backend, file_name: file, current, total, percentage, phase: 'downloading' };
    const now = Date.now();
    if (now - this.last >= PROGRESS_DEBOUNCE_MS) {
      this.last = now;
      this.pending = null;
      return this.publish(event);
    }
    this.pending = event;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      const pending = this.pending;
      this.pending = null;
      if (pending) {
        this.last = Date.now();
        this.publish(pending);
      }
    }, PROGRESS_DEBOUNCE_MS - (now - this.last));
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending) this.publish(this.pending);
    this.pending = null;
  }

  private publish(event: object): void {
    this.nc.publish(this.subject, JSON.stringify(event));
  }
}
