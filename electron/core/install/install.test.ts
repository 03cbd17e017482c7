import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { HangarError } from '../../../shared/errors.ts';
import { installBackend, stageBackend, type InstallRequest } from './install.ts';
import { guardedFetch } from '../net/guarded-fetch.ts';
import { DEFAULT_LIMITS } from './limits.ts';
import { builtinSources } from './sources.ts';
import { BackendStore } from './store.ts';
import { backendEntries, makeTar, makeTarGz, serve, sha256, snapshot, tempRoot, writeArchive, type TarEntry } from './testdata/fixtures.ts';

const noBase = { baseDir: null, baseUrl: null };

interface Harness {
  root: string;
  backends: string;
  sentinel: string;
  src: string;
  store: BackendStore;
  install(uri: string, extra?: Partial<InstallRequest>): ReturnType<typeof installBackend>;
  /** Live "demo" is the same tree (inodes, modes, content), nothing leaked, no working dir left. */
  assertUntouched(): void;
}

async function harness(t: TestContext, root?: string): Promise<Harness> {
  root ??= await tempRoot(t);
  const backends = join(root, 'backends');
  const sentinel = join(root, 'sentinel');
  const src = join(root, 'src');
  await mkdir(sentinel, { recursive: true });
  const store = new BackendStore(backends);
  const install = (uri: string, extra: Partial<InstallRequest> = {}) =>
    installBackend(store, { name: 'demo', uris: [uri], factories: builtinSources, sourceOptions: noBase, ...extra });
  await install(await writeArchive(src, 'good.tar.gz', await makeTarGz(backendEntries('v1'))));
  const before = snapshot(join(backends, 'demo'));
  return {
    root,
    backends,
    sentinel,
    src,
    store,
    install,
    assertUntouched() {
      assert.deepEqual(snapshot(join(backends, 'demo')), before);
      assert.deepEqual(readdirSync(sentinel), [], 'nothing written next to the backends dir');
      assert.deepEqual(readdirSync(backends).filter((n) => n !== '.hangar'), ['demo']);
      assert.deepEqual(workLeft(backends), [], 'no staging, backup or trash left');
      assert.deepEqual(readdirSync(root).sort(), ['backends', 'sentinel', 'src']);
    },
  };
}

function workLeft(backends: string): string[] {
  return ['staging', 'backup', 'trash'].flatMap((kind) => {
    const dir = join(backends, '.hangar', kind);
    return existsSync(dir) ? readdirSync(dir).map((n) => `${kind}/${n}`) : [];
  });
}

async function expectRejected(h: Harness, entries: TarEntry[] | Buffer, cause: RegExp, extra: Partial<InstallRequest> = {}): Promise<void> {
  const data = Buffer.isBuffer(entries) ? entries : await makeTarGz(entries);
  const path = await writeArchive(h.src, 'bad.tar.gz', data);
  await assert.rejects(h.install(path, extra), (err: unknown) => {
    assert.ok(err instanceof HangarError, String(err));
    assert.match(err.message, /^backend "demo": /);
    assert.match(err.message, cause);
    return true;
  });
  h.assertUntouched();
}

describe('symlinks are created as written, as LocalAI does', () => {
  it('keeps an absolute link (a virtualenv\'s interpreter), and a later entry at its path replaces the link, not its target', async (t) => {
    const h = await harness(t);
    const target = join(h.sentinel, 'python3');
    const venv: TarEntry[] = [
      { name: 'venv/bin/python', type: 'symlink', linkname: target },
      { name: 'venv/bin/python3', type: 'symlink', linkname: 'python' },
      { name: 'venv/lib64', type: 'symlink', linkname: '/usr/lib64' },
      { name: 'venv/bin/python', content: 'replaced' },
    ];
    await h.install(await writeArchive(h.src, 'venv.tar.gz', await makeTarGz(backendEntries('v2', venv))));
    const live = join(h.backends, 'demo');
    assert.equal(readlinkSync(join(live, 'venv/lib64')), '/usr/lib64');
    assert.equal(readlinkSync(join(live, 'venv/bin/python3')), 'python');
    assert.equal(readFileSync(join(live, 'venv/bin/python'), 'utf8'), 'replaced');
    assert.deepEqual(readdirSync(h.sentinel), [], 'nothing was written through the absolute link');
  });
});

describe('unsafe archives are refused and leave the live backend alone', () => {
  it('refuses ".." in entry names', async (t) => {
    const h = await harness(t);
    await expectRejected(h, backendEntries('v2', [{ name: '../../sentinel/evil', content: 'x' }]), /climbs out of the tree/);
  });

  it('refuses absolute entry names', async (t) => {
    const h = await harness(t);
    await expectRejected(h, backendEntries('v2', [{ name: join(h.sentinel, 'evil'), content: 'x' }]), /absolute path/);
  });

  it('refuses relative symlinks climbing out of the tree, and any write through an absolute one', async (t) => {
    const h = await harness(t);
    await expectRejected(h, backendEntries('v2', [{ name: 'out', type: 'symlink', linkname: '../../sentinel' }, { name: 'out/evil', content: 'x' }]), /symlink "out" points outside/);
    await expectRejected(h, backendEntries('v2', [{ name: 'abs', type: 'symlink', linkname: h.sentinel }, { name: 'abs/evil', content: 'x' }]), /"abs\/evil" would be written through the symlink "abs"/);
  });

  it('refuses a chain of in-tree-looking symlinks that resolves out of the tree', async (t) => {
    const h = await harness(t);
    const chain: TarEntry[] = [
      { name: 'esc', type: 'symlink', linkname: 'lib/up/..' },
      { name: 'lib/up', type: 'symlink', linkname: '..' },
    ];
    await expectRejected(h, backendEntries('v2', chain), /symlink "esc" points outside the tree through other links/);
  });

  it('refuses hardlinks out of the tree or to anything but an earlier regular file', async (t) => {
    const h = await harness(t);
    await expectRejected(h, backendEntries('v2', [{ name: 'hl', type: 'link', linkname: '../../sentinel/x' }]), /hardlink "hl" points outside/);
    await expectRejected(h, backendEntries('v2', [{ name: 'hl', type: 'link', linkname: 'lib' }]), /hardlink "hl" must point at a regular file/);
  });

  it('refuses writing through a symlink extracted earlier', async (t) => {
    const h = await harness(t);
    const through: TarEntry[] = [{ name: 'l', type: 'symlink', linkname: 'lib' }, { name: 'l/evil', content: 'x' }];
    await expectRejected(h, backendEntries('v2', through), /"l\/evil" would be written through the symlink "l"/);
  });

  it('refuses device nodes and FIFOs', async (t) => {
    const h = await harness(t);
    await expectRejected(h, backendEntries('v2', [{ name: 'null', type: 'character-device' }]), /"null" is a character-device/);
    await expectRejected(h, backendEntries('v2', [{ name: 'disk', type: 'block-device' }]), /"disk" is a block-device/);
    await expectRejected(h, backendEntries('v2', [{ name: 'pipe', type: 'fifo' }]), /"pipe" is a fifo/);
  });

  it('enforces the entry-count limit', async (t) => {
    const h = await harness(t);
    const many = Array.from({ length: 10 }, (_, i) => ({ name: `f${i}`, content: 'x' }));
    const limits = { ...DEFAULT_LIMITS, maxEntries: 8 };
    await expectRejected(h, backendEntries('v2', many), /archive holds more than 8 entries, the install entry limit/, { limits });
  });

  it('catches a gzip bomb by the size it expands to', async (t) => {
    const h = await harness(t);
    const bomb = await makeTarGz(backendEntries('v2', [{ name: 'zeros', content: Buffer.alloc(64 * 1024 * 1024) }]));
    assert.ok(bomb.length < 1024 * 1024, `bomb is small on disk (${bomb.length} bytes)`);
    const limits = { ...DEFAULT_LIMITS, maxBytes: 16 * 1024 * 1024 };
    await expectRejected(h, bomb, /archive holds more than 16\.0 MiB, the install size limit/, { limits });
  });

  it('refuses an archive that expands far more than real backends do, under the size limit', async (t) => {
    const h = await harness(t);
    const bomb = await makeTarGz(backendEntries('v2', [{ name: 'zeros', content: Buffer.alloc(80 * 1024 * 1024) }]));
    await expectRejected(h, bomb, /expands more than 100 times its compressed size .*refused as a compression bomb/);
  });

  it('refuses truncated archives: gzip cut short, tar cut mid-file, tar without its end marker', async (t) => {
    const h = await harness(t);
    const big = backendEntries('v2', [{ name: 'blob', content: randomBytes(256 * 1024) }]);
    const gz = await makeTarGz(big);
    await expectRejected(h, gz.subarray(0, gz.length >> 1), /corrupt or truncated: unexpected end of file/);
    const plain = await makeTar(big);
    await expectRejected(h, plain.subarray(0, plain.length - 100 * 1024), /corrupt or truncated: Unexpected end of data/);
    await expectRejected(h, plain.subarray(0, plain.length - 1024), /truncated: it ends without an end-of-archive marker/);
  });

  it('fails on a wrong sha256 of a tarball streamed over http, naming both digests', async (t) => {
    const h = await harness(t);
    const data = await makeTarGz(backendEntries('v2'));
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': data.length });
      for (let i = 0; i < data.length; i += 4096) res.write(data.subarray(i, i + 4096));
      res.end();
    });
    t.after(() => server.close());
    const wrong = 'ab'.repeat(32);
    await assert.rejects(h.install(`${server.url}/demo.tar.gz`, { sha256: wrong }), (err: unknown) => {
      assert.ok(err instanceof HangarError);
      assert.equal(err.message, `backend "demo": sha256 mismatch for ${server.url}/demo.tar.gz: expected ${wrong}, got ${sha256(data)}`);
      return true;
    });
    h.assertUntouched();
  });

  it('refuses a tree without run.sh', async (t) => {
    const h = await harness(t);
    await expectRejected(h, [{ name: 'VERSION', content: 'v2' }], /the tree has no run\.sh/);
  });

  it('refuses bad backend names before writing anything', async (t) => {
    const h = await harness(t);
    const good = await writeArchive(h.src, 'v2.tar.gz', await makeTarGz(backendEntries('v2')));
    for (const name of ['../x', 'a/b', '', 'x'.repeat(129), 'x.install-tmp', 'demo.previous']) {
      await assert.rejects(h.install(good, { name }), (err: unknown) => {
        assert.ok(err instanceof HangarError && err.code === 'bad-input', String(err));
        assert.match(err.message, /bad backend name/);
        return true;
      });
      assert.throws(() => h.store.liveDir(name), /bad backend name/);
    }
    h.assertUntouched();
  });
});

describe('sources are bounded: size, time, and what they may name', () => {
  async function rejectsInstall(h: Harness, uri: string, cause: RegExp, extra: Partial<InstallRequest> = {}): Promise<void> {
    await assert.rejects(h.install(uri, extra), (err: unknown) => {
      assert.ok(err instanceof HangarError, String(err));
      assert.match(err.message, cause);
      return true;
    });
    h.assertUntouched();
  }

  async function treeOf(h: Harness, files: number): Promise<string> {
    const tree = join(h.src, `tree-${files}`);
    await mkdir(tree, { recursive: true });
    await writeFile(join(tree, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    for (let i = 1; i < files; i++) await writeFile(join(tree, `f${i}`), 'x');
    return tree;
  }

  it('stops reading a download that goes on past its archive, at the install size limit', async (t) => {
    const h = await harness(t);
    const archive = await makeTar(backendEntries('v2'));
    const server = await serve((_req, res) => {
      res.writeHead(200);
      res.write(archive);
      const timer = setInterval(() => res.write(Buffer.alloc(1024 * 1024)), 1);
      res.once('close', () => clearInterval(timer));
    });
    t.after(() => server.close());
    const limits = { ...DEFAULT_LIMITS, maxBytes: 16 * 1024 * 1024 };
    await rejectsInstall(h, `${server.url}/endless.tar`, /the download is larger than 16\.0 MiB, the install size limit/, { limits });
  });

  it('gives up on a server that drips its tarball', async (t) => {
    const h = await harness(t);
    const server = await serve((_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write(Buffer.alloc(1)), 100);
      res.once('close', () => clearInterval(timer));
    });
    t.after(() => server.close());
    const fetch = guardedFetch(globalThis.fetch, { headersMs: 300, lowSpeedBytes: 1024, lowSpeedWindowMs: 300 });
    await rejectsInstall(h, `${server.url}/slow.tgz`, /slow\.tgz: stalled: less than 1024 bytes in 0\.3 s/, { fetch });
  });

  it('copies a local directory within the entry limit, stops on cancel, and never copies the home', async (t) => {
    const h = await harness(t);
    const limits = { ...DEFAULT_LIMITS, maxEntries: 8 };
    await rejectsInstall(h, await treeOf(h, 10), /tree-10 holds more than 8 entries, the install entry limit/, { limits });
    const cancelled = new AbortController();
    cancelled.abort();
    await rejectsInstall(h, await treeOf(h, 3), /aborted/i, { signal: cancelled.signal });
    await rejectsInstall(h, h.root, /is the Hangar home or holds it/, { home: h.root });
    await rejectsInstall(h, join(h.root, '..'), /is the Hangar home or holds it/, { home: h.root });
    await h.install(await treeOf(h, 3), { home: h.root });
    assert.ok(existsSync(join(h.backends, 'demo', 'f2')), 'a folder beside the home is fine');
  });

  it('refuses local paths named by a gallery that came over the network', async (t) => {
    const h = await harness(t);
    const tree = await treeOf(h, 2);
    const remote = { baseDir: null, baseUrl: 'http://gallery.test/index.yaml' };
    for (const uri of [tree, `file://${tree}`]) {
      await rejectsInstall(h, uri, /is a local path, which a gallery from http:\/\/gallery\.test\/index\.yaml may not name/, { sourceOptions: remote });
    }
  });
});

describe('install, upgrade, rollback, delete', () => {
  const version = (dir: string) => readFileSync(join(dir, 'VERSION'), 'utf8');

  it('keeps the previous version on upgrade, rolls back and forth, and deletes', async (t) => {
    const h = await harness(t);
    const live = join(h.backends, 'demo');
    const v2 = await writeArchive(h.src, 'v2.tar.gz', await makeTarGz(backendEntries('v2')));
    const meta = await h.install(v2, { details: { version: '2.0', alias: 'demo-alias' } });
    assert.equal(version(live), 'v2');
    const previous = h.store.previousDir('demo');
    assert.equal(version(previous), 'v1');
    let [demo] = await h.store.list();
    assert.equal(demo?.metadata?.version, '2.0');
    assert.equal(demo?.metadata?.sha256, meta.sha256);
    assert.equal(demo?.previous?.uri, join(h.src, 'good.tar.gz'));
    assert.equal(demo?.hasPrevious, true);
    assert.equal(demo?.broken, null);
    const onDisk = JSON.parse(readFileSync(join(live, 'metadata.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(onDisk.alias, 'demo-alias');
    assert.equal(typeof onDisk.installed_at, 'string');
    assert.equal('meta_backend_for' in onDisk, false, 'empty fields are omitted, as LocalAI does');

    await (await h.store.rollback('demo')).settle();
    assert.equal(version(live), 'v1');
    assert.equal(version(previous), 'v2');
    await (await h.store.rollback('demo')).settle();
    assert.equal(version(live), 'v2');
    [demo] = await h.store.list();
    assert.equal(demo?.metadata?.version, '2.0');

    const seen: string[] = [];
    await h.store.remove('demo', { beforeSwap: async (dir) => void seen.push(dir) });
    assert.deepEqual(seen, [live]);
    assert.equal(await h.store.get('demo'), null);
    assert.deepEqual(readdirSync(h.backends), ['.hangar']);
    assert.deepEqual(workLeft(h.backends), []);
    await assert.rejects(h.store.rollback('demo'), /no previous version/);
  });

  it('reinstalling the live version, again and again, never evicts the rollback target', async (t) => {
    const h = await harness(t);
    const v2 = await writeArchive(h.src, 'v2.tar.gz', await makeTarGz(backendEntries('v2')));
    await h.install(v2, { details: { version: '2.0' } });
    for (let i = 0; i < 3; i++) await h.install(v2, { details: { version: '2.0' } });
    assert.equal(version(join(h.backends, 'demo')), 'v2');
    assert.equal(version(h.store.previousDir('demo')), 'v1');
    assert.deepEqual(workLeft(h.backends), []);
  });

  it('an undone swap puts the replaced tree back live and leaves the rollback target as it was', async (t) => {
    const h = await harness(t);
    const v2 = await writeArchive(h.src, 'v2.tar.gz', await makeTarGz(backendEntries('v2')));
    await h.install(v2, { details: { version: '2.0' } });
    const v3 = await writeArchive(h.src, 'v3.tar.gz', await makeTarGz(backendEntries('v3')));
    const staged = await stageBackend(h.store, { name: 'demo', uris: [v3], factories: builtinSources, sourceOptions: noBase, details: { version: '3.0' } });
    const swap = await staged.commit();
    assert.equal(version(join(h.backends, 'demo')), 'v3');
    await swap.undo();
    assert.equal(version(join(h.backends, 'demo')), 'v2');
    assert.equal(version(h.store.previousDir('demo')), 'v1');
    assert.deepEqual(workLeft(h.backends), []);
  });

  it('streams an http tarball with progress, verifies its sha256 and records it', async (t) => {
    const h = await harness(t);
    const data = await makeTarGz(backendEntries('v2', [{ name: 'blob', content: randomBytes(300 * 1024) }]));
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': data.length });
      res.end(data);
    });
    t.after(() => server.close());
    const progress: [number, number | null][] = [];
    const meta = await h.install(`${server.url}/v2.tgz`, { sha256: `SHA256:${sha256(data).toUpperCase()}`, onProgress: (b, total) => progress.push([b, total]) });
    assert.equal(meta.sha256, sha256(data));
    assert.deepEqual(progress.at(-1), [data.length, data.length]);
    assert.ok(progress.length > 1, 'progress arrives while streaming');
    assert.equal(readFileSync(join(h.backends, 'demo', 'VERSION'), 'utf8'), 'v2');
  });

  it('copies a local directory, keeping modes, in-tree and absolute links, and refuses a relative link out of it', async (t) => {
    const h = await harness(t);
    const tree = join(h.src, 'tree');
    await mkdir(join(tree, 'bin'), { recursive: true });
    await writeFile(join(tree, 'run.sh'), '#!/bin/sh\n', { mode: 0o750 });
    await writeFile(join(tree, 'VERSION'), 'dir');
    await writeFile(join(tree, 'bin', 'secret'), 's', { mode: 0o600 });
    const { symlink, chmod } = await import('node:fs/promises');
    await chmod(join(tree, 'bin', 'secret'), 0o4600);
    await writeFile(join(tree, 'shared'), 'w');
    await chmod(join(tree, 'shared'), 0o666);
    await symlink('bin/secret', join(tree, 'link'));
    await symlink('/usr/bin/python3', join(tree, 'python'));
    await h.install(`file://${tree}`);
    const live = join(h.backends, 'demo');
    assert.equal(statSync(join(live, 'run.sh')).mode & 0o7777, 0o750, 'run.sh kept its mode: it has an execute bit, so LocalAI starts it as it is');
    assert.equal(statSync(join(live, 'bin', 'secret')).mode & 0o7777, 0o600, 'setuid stripped');
    assert.equal(statSync(join(live, 'shared')).mode & 0o7777, 0o664, 'world-write stripped');
    assert.equal(readFileSync(join(live, 'link'), 'utf8'), 's');
    assert.equal(readlinkSync(join(live, 'python')), '/usr/bin/python3', 'an absolute link is kept as written');

    const h2 = await harness(t);
    const outside = join(h2.src, 'outside');
    await mkdir(outside, { recursive: true });
    await writeFile(join(outside, 'run.sh'), '#!/bin/sh\n');
    await symlink('../../sentinel', join(outside, 'escape'));
    await assert.rejects(h2.install(outside), /^HangarError: backend "demo": symlink "escape" points outside the source tree/);
    h2.assertUntouched();
  });

  it('strips setuid, setgid, sticky and world-write bits and keeps owner rwx on odd directories', async (t) => {
    const h = await harness(t);
    const entries: TarEntry[] = [
      { name: 'run.sh', mode: 0o4755, content: '#!/bin/sh\n' },
      { name: 'ro/', type: 'directory', mode: 0o3555 },
      { name: 'ro/file', mode: 0o2644, content: 'x' },
      { name: 'open/', type: 'directory', mode: 0o777 },
      { name: 'open/file', mode: 0o666, content: 'x' },
    ];
    await h.install(await writeArchive(h.src, 'modes.tgz', await makeTarGz(entries)));
    const live = join(h.backends, 'demo');
    assert.equal(statSync(join(live, 'run.sh')).mode & 0o7777, 0o755);
    assert.equal(statSync(join(live, 'ro')).mode & 0o7777, 0o755);
    assert.equal(statSync(join(live, 'ro', 'file')).mode & 0o7777, 0o644);
    assert.equal(statSync(join(live, 'open')).mode & 0o7777, 0o775, 'no world-writable directory');
    assert.equal(statSync(join(live, 'open', 'file')).mode & 0o7777, 0o664, 'no world-writable file');
  });

  it('detects gzip by magic bytes, not by the file name', async (t) => {
    const h = await harness(t);
    await h.install(await writeArchive(h.src, 'really-gzip.tar', await makeTarGz(backendEntries('gz'))));
    assert.equal(readFileSync(join(h.backends, 'demo', 'VERSION'), 'utf8'), 'gz');
    await h.install(await writeArchive(h.src, 'really-plain.tgz', await makeTar(backendEntries('plain'))));
    assert.equal(readFileSync(join(h.backends, 'demo', 'VERSION'), 'utf8'), 'plain');
  });

  it('resolves relative uris against the gallery dir or URL, and falls back to mirrors', async (t) => {
    const h = await harness(t);
    const data = await makeTarGz(backendEntries('http'));
    const server = await serve((req, res) => {
      if (req.url === '/gallery/pkgs/demo.tgz') res.end(data);
      else res.writeHead(404).end();
    });
    t.after(() => server.close());
    await writeArchive(join(h.src, 'pkgs'), 'demo.tgz', await makeTarGz(backendEntries('relative')));
    await h.install('pkgs/demo.tgz', { sourceOptions: { baseDir: h.src, baseUrl: null } });
    assert.equal(readFileSync(join(h.backends, 'demo', 'VERSION'), 'utf8'), 'relative');
    await h.install('pkgs/demo.tgz', { sourceOptions: { baseDir: null, baseUrl: `${server.url}/gallery/index.yaml` } });
    assert.equal(readFileSync(join(h.backends, 'demo', 'VERSION'), 'utf8'), 'http');

    const missing = `${server.url}/missing.tgz`;
    const meta = await h.install(missing, { uris: [missing, join(h.src, 'pkgs', 'demo.tgz')] });
    assert.equal(readFileSync(join(h.backends, 'demo', 'VERSION'), 'utf8'), 'relative', 'the mirror served it');
    assert.equal(meta.uri, missing, 'the entry\'s own uri is recorded, as LocalAI does');
    await assert.rejects(h.install(missing, { uris: [missing, join(h.src, 'nope.tgz')] }), (err: unknown) => {
      assert.ok(err instanceof HangarError);
      assert.match(err.message, /^backend "demo": every source failed: .*missing\.tgz: .*HTTP 404.*; .*nope\.tgz: .*does not exist/);
      return true;
    });
    await assert.rejects(h.install('oci-ish:thing'), /no source can fetch "oci-ish:thing"/);
    assert.deepEqual(readdirSync(h.backends).sort(), ['.hangar', 'demo']);
    assert.deepEqual(workLeft(h.backends), []);
  });

  it('lists a backend with a corrupt metadata.json as broken, and the others normally', async (t) => {
    const h = await harness(t);
    const other = await writeArchive(h.src, 'other.tgz', await makeTarGz(backendEntries('o')));
    await h.install(other, { name: 'other' });
    await writeFile(join(h.backends, 'demo', 'metadata.json'), '{"name": "demo", ');
    await mkdir(join(h.backends, 'norun'));
    await writeFile(join(h.backends, 'junk.txt'), 'x');
    await h.store.writeMeta('meta', { name: 'meta', alias: null, metaBackendFor: 'other', galleryUrl: null, installedAt: '2024-01-01T00:00:00Z', version: null, uri: null, digest: null, sha256: null });
    const byName = Object.fromEntries((await h.store.list()).map((b) => [b.name, b]));
    assert.deepEqual(Object.keys(byName).sort(), ['demo', 'meta', 'norun', 'other']);
    assert.match(byName.demo!.broken ?? '', /^metadata\.json is corrupt: /);
    assert.equal(byName.other!.broken, null);
    assert.equal(byName.meta!.broken, null);
    assert.equal(byName.meta!.metadata?.metaBackendFor, 'other');
    assert.equal(byName.norun!.broken, 'run.sh is missing');
    assert.deepEqual(readdirSync(join(h.backends, 'meta')), ['metadata.json']);
  });

  it('a listing sees changes made behind its back: an edit in place, a swap by renames, a removed run.sh', async (t) => {
    const h = await harness(t);
    const version = async () => (await h.store.list()).find((b) => b.name === 'demo')?.metadata?.version ?? null;
    await h.install(await writeArchive(h.src, 'v2.tgz', await makeTarGz(backendEntries('v2'))), { details: { version: '2.0.0' } });
    assert.equal(await version(), '2.0.0');
    const meta = join(h.backends, 'demo', 'metadata.json');
    await writeFile(meta, readFileSync(meta, 'utf8').replace('2.0.0', '2.0.1'));
    assert.equal(await version(), '2.0.1', 'an in-place edit');
    const { cp, rename, rm } = await import('node:fs/promises');
    await cp(join(h.backends, 'demo'), join(h.backends, 'demo.install-tmp'), { recursive: true });
    const copied = join(h.backends, 'demo.install-tmp', 'metadata.json');
    await writeFile(copied, readFileSync(copied, 'utf8').replace('2.0.1', '3.0.0'));
    await rename(join(h.backends, 'demo'), join(h.backends, 'demo.install-backup'));
    await rename(join(h.backends, 'demo.install-tmp'), join(h.backends, 'demo'));
    await rm(join(h.backends, 'demo.install-backup'), { recursive: true });
    assert.equal(await version(), '3.0.0', 'a swap as LocalAI makes it');
    await rm(join(h.backends, 'demo', 'run.sh'));
    assert.equal((await h.store.get('demo'))?.broken, 'run.sh is missing');
    assert.equal((await h.store.list()).find((b) => b.name === 'demo')?.previous?.version ?? null, null);
    await rm(join(h.store.previousDir('demo')), { recursive: true });
    assert.equal((await h.store.get('demo'))?.hasPrevious, false, 'a rollback tree removed by hand');
  });
});
