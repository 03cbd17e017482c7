// Test helper: one .tar.gz offered by every kind of source at once: the local file, http(s) through the real guarded
// fetch from a loopback server, and a one-layer OCI image in a real registry (Debian's docker-registry).
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { guardedFetch } from '../../net/guarded-fetch.ts';
import type { InstallRequest } from '../install.ts';
import { createOciSource } from '../oci/oci-source.ts';
import { hostPlatform } from '../oci/platform.ts';
import { pushImage } from '../oci/testing/image.ts';
import { startRegistry } from '../oci/testing/registry.ts';
import { builtinSources } from '../builtin-sources.ts';
import type { ArchiveFile } from './big-files.ts';
import { serve } from './fixtures.ts';

export const ARCHIVE_SOURCES = ['local .tar.gz', 'http', 'oci'] as const;
export type ArchiveSource = (typeof ARCHIVE_SOURCES)[number];

export interface SourceRig {
  /** Offers `archive` from every archive source; returns the uri to install it from, per source. */
  publish(name: string, archive: ArchiveFile): Promise<Record<ArchiveSource, string>>;
  /** What an install needs to reach them all: every source factory, and the fetch Hangar uses. */
  request: Pick<InstallRequest, 'factories' | 'fetch'>;
  close(): Promise<void>;
}

export async function startSourceRig(): Promise<SourceRig> {
  const files = new Map<string, string>();
  const server = await serve((req, res) => {
    const file = files.get(req.url ?? '');
    if (file === undefined) return void res.writeHead(404).end();
    void stat(file).then(({ size }) => {
      res.writeHead(200, { 'content-length': size });
      createReadStream(file).pipe(res);
    });
  });
  const registry = await startRegistry().catch(async (err: unknown) => {
    await server.close();
    throw err;
  });
  const oci = createOciSource({ dockerConfigPath: join(tmpdir(), 'hangar-no-docker-config.json') });
  return {
    async publish(name, archive) {
      files.set(`/${name}.tar.gz`, archive.data.path);
      await pushImage(registry.url, `fixtures/${name}`, 'v1', { layers: [archive], platforms: [hostPlatform()] });
      return { 'local .tar.gz': archive.data.path, http: `${server.url}/${name}.tar.gz`, oci: `${registry.host}/fixtures/${name}:v1` };
    },
    request: { factories: [...builtinSources, oci], fetch: guardedFetch(globalThis.fetch) },
    async close() {
      await server.close();
      await registry.stop();
    },
  };
}
