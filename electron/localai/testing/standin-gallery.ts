// The stand-in's backend gallery, after LocalAI's core/services/galleryop and core/gallery: the backends on disk as
// ListSystemBackends sees them, their registration with the loader, and install, upgrade and delete jobs run one at a
// time with their statuses.
import { randomUUID } from 'node:crypto';
import { cp, lstat, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { localaiTimestamp, serializeMetadata } from '../../core/install/metadata.ts';
import { isFile } from './standin-loader.ts';
import type { StandInServerOptions } from './standin-server.ts';

/** The gallery's name in LocalAI's config, used for `name@backend` lookups. */
const GALLERY_NAME = 'stand-in';
const INDEX_CACHE_MS = 60 * 60_000;

interface SystemBackend {
  name: string;
  runFile: string;
  isMeta: boolean;
  metadata: Metadata;
}

type Metadata = Partial<Record<(typeof METADATA_KEYS)[number], string>>;
const METADATA_KEYS = ['alias', 'meta_backend_for', 'name', 'gallery_url', 'installed_at', 'version', 'uri', 'digest'] as const;

interface GalleryEntry {
  name: string;
  uri?: string;
  version?: string;
  alias?: string;
  capabilities?: Record<string, string>;
}

export interface Op {
  kind: 'install' | 'upgrade' | 'delete';
  name: string;
  force: boolean;
}

/** galleryop.OpStatus, the fields a single node sets. */
interface OpStatus {
  deletion?: boolean;
  error?: string;
  processed?: boolean;
  message: string;
  progress?: number;
  phase?: string;
  gallery_element_name?: string;
  cancellable?: boolean;
}

export class GalleryService {
  private closed = false;
  private readonly statuses = new Map<string, OpStatus>();
  /** The gallery worker: one operation at a time. */
  private queue: Promise<void> = Promise.resolve();
  private indexCache: { text: string; at: number } | null = null;

  /** `externalBackends` is the loader's: registrations go there. */
  constructor(
    private readonly options: Pick<StandInServerOptions, 'backendsDir' | 'gallery' | 'indexCacheMs'>,
    private readonly externalBackends: Map<string, string>,
  ) {}

  /** From here on a queued operation does not run. */
  close(): void {
    this.closed = true;
  }

  /** Settles once the operations queued so far are done. */
  idle(): Promise<void> {
    return this.queue;
  }

  /** ListSystemBackends: each directory with a run.sh, each meta's name (its concrete's run.sh), each alias. */
  private async listSystemBackends(): Promise<Map<string, SystemBackend>> {
    const backends = new Map<string, SystemBackend>();
    const aliases = new Map<string, { dir: string; runFile: string; metadata: Metadata }[]>();
    const entries = (await readdir(this.options.backendsDir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (!entry.isDirectory()) continue;
      const dir = join(this.options.backendsDir, entry.name);
      const runFile = join(dir, 'run.sh');
      const metadata = (await readMetadata(dir)) ?? { name: entry.name };
      if (await exists(runFile)) backends.set(entry.name, { name: entry.name, runFile, isMeta: false, metadata });
      if (metadata.alias) aliases.set(metadata.alias, [...(aliases.get(metadata.alias) ?? []), { dir: entry.name, runFile, metadata }]);
      if (metadata.meta_backend_for) {
        const name = metadata.name ?? '';
        backends.set(name, { name, runFile: join(this.options.backendsDir, metadata.meta_backend_for, 'run.sh'), isMeta: true, metadata });
      }
    }
    for (const [alias, candidates] of aliases) {
      // A CPU machine's build-tag preference, else the first directory.
      const chosen = candidates.find((c) => c.dir.toLowerCase().includes('cpu')) ?? candidates[0]!;
      backends.set(alias, { name: alias, runFile: chosen.runFile, isMeta: false, metadata: chosen.metadata });
    }
    return backends;
  }

  /** RegisterBackends: adds or overwrites, never removes. */
  async registerBackends(): Promise<void> {
    for (const backend of (await this.listSystemBackends()).values()) this.externalBackends.set(backend.name, backend.runFile);
  }

  /** Queues an operation for the worker; the answer is its job id. */
  enqueue(op: Op): string {
    const id = randomUUID();
    this.statuses.set(id, { message: 'queued', phase: 'queued', gallery_element_name: op.name, deletion: op.kind === 'delete', cancellable: true });
    this.queue = this.queue.then(() => this.runOp(id, op));
    return id;
  }

  /** A job's status as GET /backends/jobs/:uuid writes it. */
  jobStatus(id: string): object {
    const status = this.statuses.get(id);
    if (!status) throw new Error('could not find any status for ID');
    return opStatusJson(status);
  }

  /** The installed backends as GET /backends writes them. */
  async listed(): Promise<object[]> {
    return [...(await this.listSystemBackends()).values()].map(systemBackendJson);
  }

  /** backendHandler and the worker's updateError: each status replaces the last (keeping the deletion flag). */
  private async runOp(id: string, op: Op): Promise<void> {
    if (this.closed) return;
    const update = (status: OpStatus) => this.statuses.set(id, { ...status, deletion: status.deletion || this.statuses.get(id)?.deletion });
    update({ message: `processing backend: ${op.name}`, progress: 0, cancellable: op.kind !== 'delete' });
    try {
      if (op.kind === 'upgrade') await this.upgradeBackend(op.name);
      else if (op.kind === 'delete') await this.deleteBackend(op.name);
      else await this.installFromGallery(op.name, op.force);
    } catch (error) {
      // A failed install or upgrade removes what is there, the working install included.
      if (op.kind !== 'delete') await this.deleteBackendFromSystem(op.name).catch(() => undefined);
      const message = (error as Error).message;
      update({ error: message, processed: true, message: `error: ${message}` });
      return;
    }
    update({ deletion: op.kind === 'delete', processed: true, gallery_element_name: op.name, message: 'completed', progress: 100, cancellable: false });
  }

  /** InstallBackendFromGallery: an installed, runnable backend is left alone (and not registered) unless forced. */
  private async installFromGallery(name: string, force: boolean): Promise<void> {
    if (!force) {
      const existing = (await this.listSystemBackends()).get(name);
      if (existing && (await isFile(existing.runFile))) return;
    }
    if (!name) throw new Error('backend name is empty');
    const entries = await this.galleryEntries();
    const entry = findGalleryElement(entries, name);
    if (!entry) throw new Error(`no backend found with name ${JSON.stringify(name)}`);
    if (!isMeta(entry)) return this.installBackend(entry);
    const concrete = entry.capabilities!.default ?? entry.capabilities!.cpu;
    const best = concrete === undefined ? null : findGalleryElement(entries, concrete);
    if (!best) throw new Error(`no backend found with capabilities ${JSON.stringify(entry.capabilities)}`);
    await this.installBackend(best);
    // The meta's directory comes after the concrete's registration: the meta name is not registered until the next one.
    const dir = join(this.options.backendsDir, entry.name);
    await mkdir(dir, { recursive: true, mode: 0o750 });
    await writeMetadata(dir, { meta_backend_for: best.name, name: entry.name, gallery_url: galleryUrl(this.options.gallery), installed_at: localaiTimestamp(), version: best.version });
  }

  /** InstallBackend: stage into `<name>.install-tmp`, move the live one to `.install-backup`, swap, register. */
  private async installBackend(entry: GalleryEntry): Promise<void> {
    await mkdir(this.options.backendsDir, { recursive: true, mode: 0o750 });
    const dir = join(this.options.backendsDir, entry.name);
    const staging = `${dir}.install-tmp`;
    const backup = `${dir}.install-backup`;
    if ((await lstat(dir).catch(() => null))?.isDirectory() === false) await rm(dir);
    await rm(staging, { recursive: true, force: true });
    await rm(backup, { recursive: true, force: true });
    await mkdir(staging, { recursive: true, mode: 0o750 });
    try {
      await copyBackend(entry.uri ?? '', staging, (reason) => `failed copying: ${reason}`, (reason) => `failed to download backend ${JSON.stringify(entry.uri ?? '')}: ${reason}`);
      const stagedRun = join(staging, 'run.sh');
      if (!(await exists(stagedRun))) throw new Error(`not a valid backend: run file not found ${JSON.stringify(stagedRun)}`);
      await writeMetadata(staging, { name: entry.name, gallery_url: galleryUrl(this.options.gallery), installed_at: localaiTimestamp(), version: entry.version, uri: entry.uri, alias: entry.alias });
      if (await exists(dir)) await rename(dir, backup).catch(wrap('failed to move current backend to backup'));
      await rename(staging, dir).catch(async (error: Error) => {
        await rename(backup, dir).catch(() => undefined);
        throw new Error(`failed to move new backend into place: ${error.message}`);
      });
      await rm(backup, { recursive: true, force: true });
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    await this.registerBackends();
  }

  /** UpgradeBackend: `<name>.upgrade-tmp`, live → `<name>.backup`, tmp → live, metadata, register, drop the backup. */
  private async upgradeBackend(name: string): Promise<void> {
    const installed = (await this.listSystemBackends()).get(name);
    if (!installed) throw new Error(`backend ${JSON.stringify(name)}: backend not found`);
    if (installed.metadata.meta_backend_for) return this.upgradeBackend(installed.metadata.meta_backend_for);
    const entry = findGalleryElement(await this.galleryEntries(), name);
    if (!entry) throw new Error(`no gallery entry found for backend ${JSON.stringify(name)}`);
    const dir = join(this.options.backendsDir, name);
    const tmp = `${dir}.upgrade-tmp`;
    const backup = `${dir}.backup`;
    await rm(tmp, { recursive: true, force: true });
    await rm(backup, { recursive: true, force: true });
    await mkdir(tmp, { recursive: true, mode: 0o750 });
    try {
      await copyBackend(entry.uri ?? '', tmp, (reason) => `failed to copy backend from directory: ${reason}`, (reason) => `failed to download backend: ${reason}`);
      if (!(await exists(join(tmp, 'run.sh')))) throw new Error('upgrade validation failed: run.sh not found in new backend');
      await rename(dir, backup).catch(wrap('failed to move current backend to backup'));
      await rename(tmp, dir).catch(async (error: Error) => {
        await rename(backup, dir).catch(() => undefined);
        throw new Error(`failed to move new backend into place: ${error.message}`);
      });
    } catch (error) {
      await rm(tmp, { recursive: true, force: true });
      throw error;
    }
    const metadata = { name, version: entry.version, uri: entry.uri, installed_at: localaiTimestamp(), alias: installed.metadata.alias, gallery_url: galleryUrl(this.options.gallery) };
    await writeMetadata(dir, metadata).catch(() => undefined);
    // Registered while `<name>.backup` still holds a run.sh: that name is registered too, and stays.
    await this.registerBackends().catch(() => undefined);
    await rm(backup, { recursive: true, force: true });
  }

  /** LocalBackendManager.DeleteBackend: the exact name is unregistered whether or not the removal worked. */
  private async deleteBackend(name: string): Promise<void> {
    try {
      await this.deleteBackendFromSystem(name);
    } finally {
      this.externalBackends.delete(name);
    }
  }

  private async deleteBackendFromSystem(name: string): Promise<void> {
    const backends = await this.listSystemBackends();
    const backend = backends.get(name) ?? [...backends.values()].find((b) => b.metadata.name === name && !b.isMeta);
    if (!backend) throw new Error(`backend ${JSON.stringify(name)}: backend not found`);
    let dir = join(this.options.backendsDir, backend.name);
    if (!(await exists(dir))) {
      // An alias has no directory of its own: the one whose metadata names it goes.
      let found: string | null = null;
      for (const entry of await readdir(this.options.backendsDir, { withFileTypes: true })) {
        if (!entry.isDirectory() || found) continue;
        const metadata = await readMetadata(join(this.options.backendsDir, entry.name));
        if (metadata?.alias && (metadata.alias === name || metadata.alias === backend.name)) found = join(this.options.backendsDir, entry.name);
      }
      if (!found) throw new Error(`no backend found with name ${JSON.stringify(name)}`);
      dir = found;
    }
    const concrete = (await readMetadata(dir))?.meta_backend_for;
    if (concrete) await rm(join(this.options.backendsDir, concrete), { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  }

  /** getGalleryElements: the index as read at most `indexCacheMs` ago (an empty one is read again). */
  private async galleryEntries(): Promise<GalleryEntry[]> {
    const file = this.options.gallery;
    if (!file) return [];
    const cached = this.indexCache;
    if (cached && Date.now() - cached.at < (this.options.indexCacheMs ?? INDEX_CACHE_MS)) {
      const entries = parseIndex(cached.text);
      if (entries.length > 0) return entries;
    }
    const text = await readFile(file, 'utf8').catch(wrap('failed to read gallery elements'));
    this.indexCache = { text, at: Date.now() };
    return parseIndex(text);
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false);
}

function wrap(prefix: string): (error: Error) => never {
  return (error) => {
    throw new Error(`${prefix}: ${error.message}`);
  };
}

/** A gallery uri that is a directory is copied; anything else would be downloaded, which the stand-in does not do. */
async function copyBackend(uri: string, into: string, copyFailed: (reason: string) => string, downloadFailed: (reason: string) => string): Promise<void> {
  if (!(await stat(uri).then((s) => s.isDirectory(), () => false))) throw new Error(downloadFailed('the stand-in installs from local directories only'));
  await cp(uri, into, { recursive: true }).catch((error: Error) => {
    throw new Error(copyFailed(error.message));
  });
}

async function readMetadata(dir: string): Promise<Metadata | null> {
  const path = join(dir, 'metadata.json');
  const raw = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw new Error(`failed to read metadata file ${JSON.stringify(path)}: ${error.message}`);
  });
  if (raw === null) return null;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(raw) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`failed to unmarshal metadata file ${JSON.stringify(path)}: ${(error as Error).message}`);
  }
  return Object.fromEntries(METADATA_KEYS.flatMap((key) => (typeof parsed[key] === 'string' && parsed[key] ? [[key, parsed[key]]] : [])));
}

/** writeBackendMetadata: json.MarshalIndent of BackendMetadata, empty fields omitted. */
async function writeMetadata(dir: string, md: Metadata): Promise<void> {
  const field = (key: keyof Metadata) => md[key] || null;
  const text = serializeMetadata({
    name: md.name ?? '',
    alias: field('alias'),
    metaBackendFor: field('meta_backend_for'),
    galleryUrl: field('gallery_url'),
    installedAt: md.installed_at ?? '',
    version: field('version'),
    uri: field('uri'),
    digest: field('digest'),
    sha256: null,
  });
  await writeFile(join(dir, 'metadata.json'), text, { mode: 0o644 });
}

function galleryUrl(file: string | undefined): string | undefined {
  return file === undefined ? undefined : `file://${resolve(file)}`;
}

function parseIndex(textIndex: string): GalleryEntry[] {
  try {
    return (parse(textIndex) as GalleryEntry[] | null) ?? [];
  } catch (error) {
    throw new Error(`failed to read gallery elements: ${(error as Error).message}`);
  }
}

function isMeta(entry: GalleryEntry): boolean {
  return Object.keys(entry.capabilities ?? {}).length > 0 && !entry.uri;
}

/** FindGalleryElement: by name, case-insensitively, or as `gallery@name`; a path separator reads as `__`. */
function findGalleryElement(entries: GalleryEntry[], wanted: string): GalleryEntry | null {
  const name = wanted.replaceAll('/', '__').toLowerCase();
  const key = (entry: GalleryEntry) => (name.includes('@') ? `${GALLERY_NAME}@${entry.name}` : entry.name).toLowerCase();
  return entries.find((entry) => key(entry) === name) ?? null;
}

/** gallery.SystemBackend as GET /backends writes it: Go field names, no json tags. */
function systemBackendJson(backend: SystemBackend): object {
  const metadata = Object.fromEntries(METADATA_KEYS.flatMap((key) => (backend.metadata[key] ? [[key, backend.metadata[key]]] : [])));
  return { Name: backend.name, RunFile: backend.runFile, IsMeta: backend.isMeta, IsSystem: false, Metadata: metadata };
}

/** OpStatus's wire form, in its struct order. */
function opStatusJson(status: OpStatus): object {
  return {
    deletion: status.deletion ?? false,
    file_name: '',
    ...(status.error && { error: status.error }),
    processed: status.processed ?? false,
    message: status.message,
    progress: status.progress ?? 0,
    ...(status.phase && { phase: status.phase }),
    file_size: '',
    downloaded_size: '',
    gallery_element_name: status.gallery_element_name ?? '',
    cancelled: false,
    cancellable: status.cancellable ?? false,
  };
}
