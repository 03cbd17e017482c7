// Pulls from a real registry (Debian's docker-registry), sometimes behind a misbehaving proxy.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { HangarError } from '../../../../shared/errors.ts';
import { guardedFetch } from '../../net/guarded-fetch.ts';
import type { FetchContext, FetchResult } from '../source.ts';
import { DigestResolver } from './digest-resolver.ts';
import { createOciSource, type OciSourceOptions } from './oci-source.ts';
import { hostPlatform } from './platform.ts';
import { buildLayer, deleteBlob, directoryEntries, foreignPlatform, pushImage, type Blob, type LayerEntry } from './testing/image.ts';
import { startRecordingServer, startRegistryProxy, type RegistryProxy, type TestServer } from './testing/proxy.ts';
import { startRegistry, type TestRegistry } from './testing/registry.ts';

const ECHO_DIR = join(import.meta.dirname, '../../../../dist/backends/echo');
const host = hostPlatform();
const foreign = foreignPlatform(host);

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hangar-oci-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

interface Pulled {
  dir: string;
  result: FetchResult;
  progress: [number, number | null][];
}

async function pull(uri: string, options: OciSourceOptions = {}, fetch = globalThis.fetch): Promise<Pulled> {
  const dir = await tempDir();
  const progress: [number, number | null][] = [];
  const ctx: FetchContext = { signal: new AbortController().signal, onProgress: (b, t) => progress.push([b, t]), fetch };
  const source = createOciSource(options);
  assert.ok(source.matches(uri), `${uri} should be an OCI reference`);
  const result = await source.create(uri, { baseDir: null, baseUrl: null }).fetchInto(dir, ctx);
  return { dir, result, progress };
}

async function rejectsWith(promise: Promise<unknown>, code: string, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof HangarError, `expected a HangarError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    assert.match(err.message, pattern);
    assert.doesNotMatch(err.message, /\n/);
    return true;
  });
}

async function tree(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const item of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${item.name}` : item.name;
    out.push(item.isDirectory() ? `${rel}/` : rel);
    if (item.isDirectory()) out.push(...(await tree(dir, rel)));
  }
  return out.sort();
}

function randomFile(path: string, size: number): LayerEntry {
  return { path, content: randomBytes(size) };
}

let registry: TestRegistry;
before(async () => {
  registry = await startRegistry();
  cleanups.push(() => registry.stop());
});

async function push(repository: string, tag: string, layers: Blob[], platforms = [host, foreign]) {
  return pushImage(registry.url, repository, tag, { layers, platforms });
}

describe('ociSource against a real registry', () => {
  test('pulls the echo backend for this platform out of a multi-platform index', async () => {
    assert.ok(existsSync(ECHO_DIR), 'dist/backends/echo is missing: run npm run build first');
    const layer = await buildLayer(await directoryEntries(ECHO_DIR));
    const pushed = await push('backends/echo', 'latest', [layer]);
    assert.notEqual(pushed.index, null);

    const uri = `${registry.host}/backends/echo:latest`;
    const { dir, result, progress } = await pull(uri);

    assert.deepEqual(await tree(dir), (await tree(ECHO_DIR)).sort());
    for (const name of await readdir(ECHO_DIR)) {
      assert.deepEqual(await readFile(join(dir, name)), await readFile(join(ECHO_DIR, name)), name);
    }
    assert.ok(((await stat(join(dir, 'run.sh'))).mode & 0o111) !== 0, 'run.sh stays executable');
    assert.equal(result.digest, pushed.index, 'the digest is the tag\'s (the index), as LocalAI records it');
    assert.notEqual(result.digest, pushed.manifests[0]);
    assert.equal(result.servedBy, uri);
    assert.equal(result.sha256, null);
    assert.deepEqual(progress.at(-1), [layer.size, layer.size]);
  });

  test('a whiteout in an upper layer removes a lower file, an opaque marker empties a directory', async () => {
    const lower = await buildLayer([
      { path: 'keep.txt', content: 'keep' },
      { path: 'gone.txt', content: 'gone' },
      { path: 'replaced.txt', content: 'old' },
      { path: 'dir' },
      { path: 'dir/a', content: 'a' },
      { path: 'dir/b', content: 'b' },
    ]);
    // The upper layer is uncompressed, so both layer media types are exercised.
    const upper = await buildLayer(
      [{ path: '.wh.gone.txt', content: '' }, { path: 'dir/.wh..wh..opq', content: '' }, { path: 'dir/c', content: 'c' }, { path: 'replaced.txt', content: 'new' }],
      { gzip: false },
    );
    await push('layers/whiteout', 'v1', [lower, upper], [host]);

    const { dir, result, progress } = await pull(`oci://${registry.host}/layers/whiteout:v1`);
    assert.deepEqual(await tree(dir), ['dir/', 'dir/c', 'keep.txt', 'replaced.txt']);
    assert.equal(await readFile(join(dir, 'replaced.txt'), 'utf8'), 'new');
    assert.match(result.digest ?? '', /^sha256:[a-f0-9]{64}$/);
    assert.deepEqual(progress.at(-1), [lower.size + upper.size, lower.size + upper.size]);
  });

  test('a manifest only for another platform is a clear not-found error', async () => {
    const layers = [await buildLayer([{ path: 'x', content: 'x' }])];
    await pushImage(registry.url, 'other/arch', 'v1', { layers, platforms: [foreign], index: true });
    const uri = `${registry.host}/other/arch:v1`;
    await rejectsWith(pull(uri), 'not-found', new RegExp(`${uri}: no image for ${host.os}/${host.architecture}.*${foreign.architecture}`));
  });

  test('a digest-pinned reference pulls exactly that image; a pin that does not exist is not-found', async () => {
    const pushed = await push('pinned/app', 'v1', [await buildLayer([{ path: 'pinned.txt', content: 'one' }])]);
    await push('pinned/app', 'v1', [await buildLayer([{ path: 'pinned.txt', content: 'two' }])]);
    const { dir, result } = await pull(`${registry.host}/pinned/app@${pushed.index}`);
    assert.equal(await readFile(join(dir, 'pinned.txt'), 'utf8'), 'one', 'the pin wins over the moved tag');
    assert.equal(result.digest, pushed.index, 'the digest recorded is the pin itself');
    await rejectsWith(pull(`${registry.host}/pinned/app@sha256:${'0'.repeat(64)}`), 'not-found', /pinned\/app@sha256:0+: manifest sha256:0+ not found/);
  });

  test('a zstd layer is refused as an unsupported layer media type', async () => {
    const layer = await buildLayer([{ path: 'x', content: 'x' }]);
    await push('zstd/app', 'v1', [{ ...layer, mediaType: 'application/vnd.oci.image.layer.v1.tar+zstd' }], [host]);
    const uri = `${registry.host}/zstd/app:v1`;
    await rejectsWith(pull(uri), 'bad-input', new RegExp(`${uri}: unsupported layer media type application/vnd.oci.image.layer.v1.tar\\+zstd`));
  });

  test('a missing blob and a missing tag are clear not-found errors', async () => {
    const layer = await buildLayer([{ path: 'x', content: 'x' }]);
    await push('missing/blob', 'v1', [layer], [host]);
    await deleteBlob(registry.url, 'missing/blob', layer.digest);
    await rejectsWith(pull(`${registry.host}/missing/blob:v1`), 'not-found', new RegExp(`missing/blob:v1: blob ${layer.digest} is missing`));
    await rejectsWith(pull(`${registry.host}/missing/blob:nope`), 'not-found', /missing\/blob:nope: manifest nope not found/);
  });
});

describe('DigestResolver', () => {
  test('reports the tag digest (the index), caches it, and sees a re-pushed tag after refresh()', async () => {
    const first = await push('resolver/app', 'stable', [await buildLayer([{ path: 'v', content: '1' }])]);
    const resolver = new DigestResolver({ fetch: globalThis.fetch });
    const ref = `${registry.host}/resolver/app:stable`;
    assert.equal(await resolver.current(ref), first.index);

    const second = await push('resolver/app', 'stable', [await buildLayer([{ path: 'v', content: '2' }])]);
    assert.notEqual(second.index, first.index);
    assert.equal(await resolver.current(ref), first.index, 'cached within the TTL');
    resolver.refresh();
    assert.equal(await resolver.current(ref), second.index);

    assert.equal(await resolver.current(`${registry.host}/resolver/app:absent`), null);
    assert.equal(await resolver.current('./backends/echo'), null);
  });
});

describe('registry authentication', () => {
  const user = { username: 'hangar', password: 's3cret' };
  let secured: TestRegistry;
  const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

  before(async () => {
    secured = await startRegistry({ htpasswd: user });
    cleanups.push(() => secured.stop());
    const layer = await buildLayer([{ path: 'secret.txt', content: 'hello' }]);
    await pushImage(secured.url, 'private/app', 'v1', { layers: [layer], platforms: [host] }, { headers: { authorization: basic(user.username, user.password) } });
  });

  async function dockerConfig(auth: string): Promise<string> {
    const path = join(await tempDir(), 'config.json');
    await writeFile(path, JSON.stringify({ auths: { [secured.host]: { auth } } }));
    return path;
  }

  test('htpasswd registry: credentials from a docker config.json are used', async () => {
    const dockerConfigPath = await dockerConfig(Buffer.from(`${user.username}:${user.password}`).toString('base64'));
    const { dir } = await pull(`${secured.host}/private/app:v1`, { dockerConfigPath });
    assert.equal(await readFile(join(dir, 'secret.txt'), 'utf8'), 'hello');
  });

  test('htpasswd registry: no or wrong credentials are a clear error', async () => {
    const uri = `${secured.host}/private/app:v1`;
    await rejectsWith(pull(uri, { dockerConfigPath: join(await tempDir(), 'absent.json') }), 'forbidden', new RegExp(`${uri}: .*requires a login`));
    const wrong = await dockerConfig(Buffer.from(`${user.username}:nope`).toString('base64'));
    await rejectsWith(pull(uri, { dockerConfigPath: wrong }), 'forbidden', new RegExp(`${uri}: .*refused the credentials`));
  });
});

describe('through a proxy', () => {
  let proxy: RegistryProxy;
  let storage: TestServer;
  let bigLayer: Blob;

  before(async () => {
    proxy = await startRegistryProxy(registry.url);
    storage = await startRecordingServer(registry.url);
    cleanups.push(() => proxy.close(), () => storage.close());
    bigLayer = await buildLayer([randomFile('data/blob.bin', 2 * 1024 * 1024), { path: 'run.sh', content: '#!/bin/sh\n', mode: 0o755 }]);
    await push('proxied/app', 'v1', [bigLayer], [host]);
  });

  function reset(behaviour: Partial<RegistryProxy['behaviour']>): void {
    proxy.behaviour = { bearer: false, corruptBlobs: false, dropNextBlob: false, redirectBlobsTo: null, dripBlobs: null, ...behaviour };
    proxy.requests.length = 0;
    proxy.tokenRequests.length = 0;
    storage.requests.length = 0;
  }

  test('follows a bearer challenge and reuses the token for the scope', async () => {
    reset({ bearer: true });
    const options = { dockerConfigPath: join(tmpdir(), 'hangar-no-such-config.json') };
    const source = createOciSource(options);
    const ctx: FetchContext = { signal: new AbortController().signal, onProgress: () => undefined, fetch: globalThis.fetch };
    for (let i = 0; i < 2; i++) {
      const dir = await tempDir();
      await source.create(`${proxy.host}/proxied/app:v1`, { baseDir: null, baseUrl: null }).fetchInto(dir, ctx);
      assert.equal((await stat(join(dir, 'data/blob.bin'))).size, 2 * 1024 * 1024);
    }
    assert.deepEqual(proxy.tokenRequests, ['repository:proxied/app:pull'], 'one token, cached across pulls');
    const unauthorized = proxy.requests.filter((r) => r.path.startsWith('/v2/') && !r.headers.authorization);
    assert.equal(unauthorized.length, 1, 'only the first request goes without a token');
  });

  test('a corrupted blob fails the digest check', async () => {
    reset({ corruptBlobs: true });
    const uri = `${proxy.host}/proxied/app:v1`;
    await rejectsWith(pull(uri), 'bad-input', new RegExp(`${uri}: blob ${bigLayer.digest} failed digest verification`));
  });

  test('a connection dropped mid-blob is resumed with a Range request', async () => {
    reset({ dropNextBlob: true });
    const { dir, progress } = await pull(`${proxy.host}/proxied/app:v1`);
    assert.equal((await stat(join(dir, 'data/blob.bin'))).size, 2 * 1024 * 1024);
    const ranges = proxy.requests.filter((r) => r.path.includes('/blobs/')).map((r) => r.headers.range ?? null);
    assert.equal(ranges.length, 2);
    assert.equal(ranges[0], null);
    const resumedAt = Number(/^bytes=(\d+)-$/.exec(ranges[1] ?? '')?.[1]);
    assert.ok(resumedAt > 0 && resumedAt <= bigLayer.size / 2, `resumed at ${ranges[1]}`);
    assert.deepEqual(progress.at(-1), [bigLayer.size, bigLayer.size], 'no byte counted twice');
  });

  test('a blob dripped just fast enough for the stall rule is given up on, naming the rate it averaged', async () => {
    reset({ dripBlobs: { bytes: 1100, everyMs: 100 } });
    const limits = { headersMs: 2000, lowSpeedBytes: 1024, lowSpeedWindowMs: 300, minRateBytesPerSec: 16 * 1024, minRateWindowMs: 1000 };
    const uri = `${proxy.host}/proxied/app:v1`;
    await rejectsWith(pull(uri, {}, guardedFetch(globalThis.fetch, limits)), 'failed', /blobs\/sha256:[0-9a-f]{64}: too slow: \d+(\.\d)? KiB\/s averaged over the last 1 s, under the 16 KiB\/s minimum$/);
  });

  test('a redirect to another host does not carry the Authorization header', async () => {
    reset({ bearer: true, redirectBlobsTo: storage.url });
    const { dir } = await pull(`${proxy.host}/proxied/app:v1`);
    assert.equal((await stat(join(dir, 'data/blob.bin'))).size, 2 * 1024 * 1024);
    assert.ok(proxy.requests.some((r) => r.path.includes('/blobs/') && r.headers.authorization?.startsWith('Bearer ')));
    const stored = storage.requests.filter((r) => r.path.includes('/blobs/'));
    assert.equal(stored.length, 1);
    assert.equal(stored[0]!.headers.authorization, undefined);
  });
});
