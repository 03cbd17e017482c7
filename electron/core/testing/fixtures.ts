// Test fixtures shared by the core and agent tests: temp homes, galleries and copies of the built echo backend.
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import type { JobView, NodeEvent } from '../../../shared/types.ts';
import { isBackendCompatible } from '../gallery/meta.ts';
import { serializeMetadata } from '../install/metadata.ts';
import { LocalNode, type LocalNodeOptions } from '../node.ts';

export const BUILT_ECHO = resolve('dist/backends/echo');

/**
 * A new temporary directory. As in LocalAI, a backend whose name or URI holds a vendor's word ("amd", "hip",
 * "cuda", "l4t", "mlx"…) runs only on that vendor's machines, and a local source's URI is its path: a random
 * suffix holding one would make every test backend under it that vendor's, so such a suffix is drawn again.
 */
export async function tempDir(prefix: string): Promise<string> {
  for (;;) {
    const dir = await mkdtemp(join(tmpdir(), `hangar-${prefix}-`));
    if (VENDOR_NEUTRAL.every((capability) => isBackendCompatible('', dir, capability))) return dir;
    await rm(dir, { recursive: true, force: true });
  }
}

/** A path compatible with each of these holds no vendor's word. */
const VENDOR_NEUTRAL = ['default', 'metal', 'nvidia', 'nvidia-l4t', 'amd', 'intel'];

/** A copy of the built echo backend whose VERSION file says `version`. */
export async function echoSource(root: string, version: string): Promise<string> {
  const dir = join(root, `echo-src-${version}`);
  await cp(BUILT_ECHO, dir, { recursive: true });
  await writeFile(join(dir, 'VERSION'), version + '\n');
  return dir;
}

export interface GalleryEntryInput {
  name: string;
  uri?: string;
  version?: string;
  alias?: string;
  sha256?: string;
  mirrors?: string[];
  capabilities?: Record<string, string>;
}

export async function writeGallery(file: string, entries: GalleryEntryInput[]): Promise<void> {
  await writeFile(file, stringify(entries));
}

/**
 * `count` backends installed straight into `<home>/backends` (a run.sh and LocalAI's metadata.json each, with the
 * sha256 an archive install records: what the store reads), and a gallery index listing each of them, every other
 * one at a newer version.
 */
export async function installedBackends(root: string, home: string, count: number): Promise<string> {
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = `backend-${String(i).padStart(4, '0')}`;
    const dir = join(home, 'backends', name);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    const sha256 = createHash('sha256').update(name).digest('hex');
    const meta = { name, alias: null, metaBackendFor: null, galleryUrl: null, installedAt: new Date().toISOString(), version: '1.0.0', uri: `./${name}`, digest: null, sha256 };
    await writeFile(join(dir, 'metadata.json'), serializeMetadata(meta));
    lines.push(`- name: ${name}\n  uri: ./src/${name}\n  version: "1.${i % 2}.0"\n`);
  }
  const gallery = join(root, `index-${count}.yaml`);
  await writeFile(gallery, lines.join(''));
  return gallery;
}

export interface TestNode {
  node: LocalNode;
  root: string;
  gallery: string;
  events: NodeEvent[];
  /** Publishes echo `version` in the gallery (a fresh source dir) and returns its source dir. */
  publishEcho(version: string, extra?: Partial<GalleryEntryInput>): Promise<string>;
  close(): Promise<void>;
}

/** A LocalNode on a temp home whose only gallery offers the built echo backend. */
export async function startTestNode(options: Partial<LocalNodeOptions> = {}): Promise<TestNode> {
  const root = await tempDir('node');
  const gallery = join(root, 'index.yaml');
  const publishEcho = async (version: string, extra: Partial<GalleryEntryInput> = {}) => {
    const src = await echoSource(root, version);
    await writeGallery(gallery, [{ name: 'echo', uri: src, version, ...extra }]);
    return src;
  };
  await publishEcho('1.0.0');
  const node = new LocalNode({
    home: join(root, 'home'),
    galleries: [{ name: 'test', location: gallery }],
    runtimeEnv: { HANGAR_NODE: process.execPath },
    ...options,
  });
  const events: NodeEvent[] = [];
  node.on('event', (e) => events.push(e));
  await node.start();
  return {
    node,
    root,
    gallery,
    events,
    publishEcho,
    close: async () => {
      await node.close({ stopBackends: true });
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** Starts a job through `start` and waits for it; throws with the job's error if it did not finish. */
export async function runJob(node: LocalNode, start: Promise<JobView>): Promise<JobView> {
  const job = await node.waitJob({ node: 'local', id: (await start).id });
  if (job.state !== 'done') throw new Error(`${job.kind} ${job.backend} ${job.state}: ${job.error}`);
  return job;
}
