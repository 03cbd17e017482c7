// Test helpers: real tarballs (tar-stream's pack), temp trees, a loopback HTTP server, tree snapshots.
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, lstatSync, readlinkSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';

export interface TarEntry {
  name: string;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'fifo' | 'block-device';
  mode?: number;
  linkname?: string;
  content?: string | Buffer;
}

export async function makeTar(entries: TarEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (chunk) => void chunks.push(chunk as Buffer));
  const done = new Promise<void>((resolve, reject) => {
    pack.on('end', resolve);
    pack.on('error', reject);
  });
  for (const { content, ...header } of entries) {
    await new Promise<void>((resolve, reject) =>
      pack.entry({ type: 'file', mode: 0o644, ...header }, content ?? '', (err) => (err ? reject(err) : resolve())),
    );
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

export async function makeTarGz(entries: TarEntry[]): Promise<Buffer> {
  return gzipSync(await makeTar(entries));
}

export function backendEntries(version: string, extra: TarEntry[] = []): TarEntry[] {
  return [
    { name: 'run.sh', mode: 0o755, content: '#!/bin/sh\nexec true\n' },
    { name: 'VERSION', content: version },
    { name: 'lib/', type: 'directory', mode: 0o755 },
    { name: 'lib/data.bin', content: `payload of ${version}` },
    ...extra,
  ];
}

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export async function tempRoot(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const root = mkdtempSync(join(tmpdir(), 'hangar-install-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  return root;
}

export async function writeArchive(dir: string, name: string, data: Buffer): Promise<string> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, name);
  await writeFile(path, data);
  return path;
}

/** Serves `handler` on 127.0.0.1; returns the base URL and a close function. */
export async function serve(handler: RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(handler);
  // Node's keep-alive timer starts once the last byte is handed to the kernel, not once the client has read it: a
  // reader slowed by a loaded machine, still extracting a large archive, had its connection cut 5 s later.
  server.keepAliveTimeout = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Path -> inode, mode and content (or link target) of every entry under `dir`, to prove a tree untouched. */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    const path = join(dir, rel);
    const stats = lstatSync(path, { bigint: true });
    const body = stats.isSymbolicLink()
      ? `-> ${readlinkSync(path)}`
      : stats.isFile()
        ? createHash('sha256').update(readFileSync(path)).digest('hex')
        : 'dir';
    out[rel || '.'] = `${stats.ino}:${(stats.mode & 0o7777n).toString(8)}:${body}`;
    if (stats.isDirectory()) for (const name of readdirSync(path).sort()) walk(rel ? `${rel}/${name}` : name);
  };
  walk('');
  return out;
}
