// A backend gallery over HTTP for the LocalAI stand-ins: an index.yaml that a test can change, and each backend's
// artifact served in chunks with pauses, so a worker's download takes long enough to report progress.
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface GalleryBackend {
  name: string;
  version?: string;
  /** Capability key → build name: a meta backend. */
  capabilities?: Record<string, string>;
  /** Size of the artifact the worker downloads (default 256 KiB). */
  bytes?: number;
}

export interface GalleryServer {
  url: string;
  /** The index's address, as a LocalAI gallery names it. */
  indexUrl: string;
  /** Replaces what the index lists. */
  publish(backends: GalleryBackend[]): void;
  /** How many times the index was read. */
  reads(): number;
  close(): Promise<void>;
}

const CHUNK = 16 * 1024;

export async function startGalleryServer(backends: GalleryBackend[], options: { chunkDelayMs?: number } = {}): Promise<GalleryServer> {
  let listed = backends;
  // An artifact stays downloadable after the index moves on, as an image tag does in a registry.
  const served = [...backends];
  let reads = 0;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path === '/index.yaml') {
        reads++;
        res.writeHead(200, { 'content-type': 'application/yaml' });
        return res.end(indexYaml(listed, url));
      }
      const artifact = /^\/artifacts\/([^/]+)\/([^/]+)$/.exec(path);
      const backend = artifact && served.find((b) => b.name === decodeURIComponent(artifact[1]!) && (b.version ?? 'none') === decodeURIComponent(artifact[2]!));
      if (!backend) {
        res.writeHead(404);
        return res.end('not found');
      }
      const size = backend.bytes ?? 256 * 1024;
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size) });
      for (let sent = 0; sent < size; sent += CHUNK) {
        if (!res.write(Buffer.alloc(Math.min(CHUNK, size - sent), 7))) await once(res, 'drain');
        if (options.chunkDelayMs) await sleep(options.chunkDelayMs);
      }
      res.end();
    })().catch(() => res.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    indexUrl: `${url}/index.yaml`,
    publish: (next) => {
      listed = next;
      served.unshift(...next);
    },
    reads: () => reads,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function indexYaml(backends: GalleryBackend[], url: string): string {
  return backends
    .map((b) => {
      if (b.capabilities) {
        const caps = Object.entries(b.capabilities).map(([key, build]) => `    ${key}: ${JSON.stringify(build)}`);
        return [`- name: ${JSON.stringify(b.name)}`, '  capabilities:', ...caps].join('\n');
      }
      return [
        `- name: ${JSON.stringify(b.name)}`,
        `  uri: ${JSON.stringify(`${url}/artifacts/${encodeURIComponent(b.name)}/${encodeURIComponent(b.version ?? 'none')}`)}`,
        ...(b.version ? [`  version: ${JSON.stringify(b.version)}`] : []),
      ].join('\n');
    })
    .join('\n')
    .concat('\n');
}
