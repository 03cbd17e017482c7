// Test-only: builds OCI images (tar/tar.gz layers, config, manifest, multi-platform index) and pushes them to a
// registry with the distribution spec's monolithic upload.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { PassThrough, Readable, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants, createGzip } from 'node:zlib';
import { pack } from 'tar-stream';
import { MEDIA_TYPES } from '../manifest.ts';
import type { Platform } from '../platform.ts';

export interface LayerEntry {
  path: string;
  /** Absent for a directory. */
  content?: string | Buffer | (() => Readable);
  /** Size of `content` when it is a stream factory. */
  size?: number;
  mode?: number;
}

export interface Blob {
  mediaType: string;
  digest: string;
  size: number;
  /** The bytes, or a file holding them. */
  data: Buffer | { path: string };
}

export interface PushAuth {
  headers?: Record<string, string>;
}

const LAYER_GZIP = 'application/vnd.oci.image.layer.v1.tar+gzip';
const LAYER_TAR = 'application/vnd.oci.image.layer.v1.tar';
const CONFIG = 'application/vnd.oci.image.config.v1+json';

export function jsonBlob(mediaType: string, value: unknown): Blob {
  const data = Buffer.from(JSON.stringify(value));
  return { mediaType, data, size: data.length, digest: sha256(data) };
}

export interface LayerOptions {
  gzip?: boolean;
  /** Writes the layer to this file instead of memory (large layers). */
  file?: string;
  /** Gzips with zlib's RLE strategy: several times faster on incompressible data, and still a true gzip stream. */
  fast?: boolean;
}

/** A layer of `entries`, in memory or in `options.file`. */
export async function buildLayer(entries: Iterable<LayerEntry>, options: LayerOptions = {}): Promise<Blob> {
  const tar = pack();
  const layer = layerOf(tar as unknown as Readable, options);
  for (const entry of entries) await addEntry(tar, entry);
  tar.finalize();
  return layer;
}

/** A layer of the tar byte stream `tar` (gzipped unless told otherwise), hashed as it is written. */
export async function layerOf(tar: Readable, options: LayerOptions = {}): Promise<Blob> {
  const gzip = options.gzip ?? true;
  const hash = createHash('sha256');
  let size = 0;
  const measure = new Transform({
    transform(chunk: Buffer, _enc, callback) {
      hash.update(chunk);
      size += chunk.length;
      callback(null, chunk);
    },
  });
  const chunks: Buffer[] = [];
  const sink: Writable = options.file ? createWriteStream(options.file) : new PassThrough().on('data', (c: Buffer) => chunks.push(c));
  const gzipOptions = options.fast ? { strategy: constants.Z_RLE } : { level: 1 };
  await pipeline([tar, ...(gzip ? [createGzip(gzipOptions)] : []), measure, sink]);
  return {
    mediaType: gzip ? LAYER_GZIP : LAYER_TAR,
    digest: `sha256:${hash.digest('hex')}`,
    size,
    data: options.file ? { path: options.file } : Buffer.concat(chunks),
  };
}

async function addEntry(tar: ReturnType<typeof pack>, entry: LayerEntry): Promise<void> {
  if (entry.content === undefined) {
    tar.entry({ name: entry.path, type: 'directory', mode: entry.mode ?? 0o755 });
    return;
  }
  if (typeof entry.content === 'function') {
    const sink = tar.entry({ name: entry.path, size: entry.size!, mode: entry.mode ?? 0o644 });
    await pipeline(entry.content(), sink);
    return;
  }
  await new Promise<void>((resolve, reject) =>
    tar.entry({ name: entry.path, mode: entry.mode ?? 0o644 }, entry.content as string | Buffer, (err) => (err ? reject(err) : resolve())),
  );
}

/** Every directory and file under `dir` as layer entries (modes kept). */
export async function directoryEntries(dir: string, root = dir): Promise<LayerEntry[]> {
  const entries: LayerEntry[] = [];
  for (const item of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, item.name);
    const { mode } = await stat(path);
    const name = relative(root, path);
    if (item.isDirectory()) entries.push({ path: name, mode: mode & 0o7777 }, ...(await directoryEntries(path, root)));
    else if (item.isFile()) entries.push({ path: name, content: await readFile(path), mode: mode & 0o7777 });
  }
  return entries;
}

/** Config and manifest for one platform's image. */
export function imageManifest(layers: Blob[], platform: Platform): { config: Blob; manifest: Blob } {
  const config = jsonBlob(CONFIG, {
    ...platform,
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.digest) },
    config: {},
  });
  const manifest = jsonBlob(MEDIA_TYPES.ociManifest, {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.ociManifest,
    config: descriptor(config),
    layers: layers.map(descriptor),
  });
  return { config, manifest };
}

export function imageIndex(images: { manifest: Blob; platform: Platform }[]): Blob {
  return jsonBlob(MEDIA_TYPES.ociIndex, {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.ociIndex,
    manifests: images.map(({ manifest, platform }) => ({ ...descriptor(manifest), platform })),
  });
}

function descriptor(blob: Blob): { mediaType: string; digest: string; size: number } {
  return { mediaType: blob.mediaType, digest: blob.digest, size: blob.size };
}

/** A platform that is not this machine's. */
export function foreignPlatform(host: Platform): Platform {
  return host.architecture === 's390x' ? { os: 'linux', architecture: 'riscv64' } : { os: 'linux', architecture: 's390x' };
}

export interface PushedImage {
  /** Manifest digest per pushed platform, in order. */
  manifests: string[];
  /** Digest of the index, when several platforms were pushed. */
  index: string | null;
}

/**
 * Pushes layers + config + manifest for each platform (the same layers for all), then tags either the single
 * manifest or an index of them. `registryUrl` is the registry's base URL (`http://127.0.0.1:PORT`).
 */
export async function pushImage(
  registryUrl: string,
  repository: string,
  tag: string,
  image: { layers: Blob[]; platforms: Platform[]; index?: boolean },
  auth: PushAuth = {},
): Promise<PushedImage> {
  const manifests: { manifest: Blob; platform: Platform }[] = [];
  for (const layer of image.layers) await pushBlob(registryUrl, repository, layer, auth);
  for (const platform of image.platforms) {
    const { config, manifest } = imageManifest(image.layers, platform);
    await pushBlob(registryUrl, repository, config, auth);
    manifests.push({ manifest, platform });
  }
  const useIndex = image.index ?? image.platforms.length > 1;
  if (!useIndex) {
    await pushManifest(registryUrl, repository, tag, manifests[0]!.manifest, auth);
    return { manifests: [manifests[0]!.manifest.digest], index: null };
  }
  for (const { manifest } of manifests) await pushManifest(registryUrl, repository, manifest.digest, manifest, auth);
  const index = imageIndex(manifests);
  await pushManifest(registryUrl, repository, tag, index, auth);
  return { manifests: manifests.map((m) => m.manifest.digest), index: index.digest };
}

export async function pushBlob(registryUrl: string, repository: string, blob: Blob, auth: PushAuth = {}): Promise<void> {
  const base = `${registryUrl}/v2/${repository}/blobs`;
  const exists = await fetch(`${base}/${blob.digest}`, { method: 'HEAD', headers: auth.headers });
  if (exists.ok) return;
  const started = await fetch(`${base}/uploads/`, { method: 'POST', headers: auth.headers });
  await expectStatus(started, 202, `start upload of ${blob.digest}`);
  const location = new URL(started.headers.get('location')!, registryUrl);
  location.searchParams.set('digest', blob.digest);
  const body = Buffer.isBuffer(blob.data) ? new Uint8Array(blob.data) : Readable.toWeb(createReadStream(blob.data.path));
  const put = await fetch(location, {
    method: 'PUT',
    headers: { ...auth.headers, 'content-type': 'application/octet-stream', 'content-length': String(blob.size) },
    body: body as BodyInit,
    duplex: 'half',
  } as RequestInit);
  await expectStatus(put, 201, `upload ${blob.digest}`);
}

export async function pushManifest(registryUrl: string, repository: string, reference: string, manifest: Blob, auth: PushAuth = {}): Promise<void> {
  const response = await fetch(`${registryUrl}/v2/${repository}/manifests/${reference}`, {
    method: 'PUT',
    headers: { ...auth.headers, 'content-type': manifest.mediaType },
    body: new Uint8Array(manifest.data as Buffer),
  });
  await expectStatus(response, 201, `push manifest ${reference}`);
}

/** Deletes a blob from the registry's storage (to make a manifest point at a missing blob). */
export async function deleteBlob(registryUrl: string, repository: string, digest: string): Promise<void> {
  const response = await fetch(`${registryUrl}/v2/${repository}/blobs/${digest}`, { method: 'DELETE' });
  await expectStatus(response, 202, `delete ${digest}`);
}

async function expectStatus(response: Response, status: number, what: string): Promise<void> {
  const text = await response.text();
  if (response.status !== status) throw new Error(`${what}: HTTP ${response.status} ${text}`);
}

function sha256(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}
