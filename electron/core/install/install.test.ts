import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { link, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { HangarError } from '../../../shared/errors.ts';
import { stageBackend, type InstallRequest } from './install.ts';
import { guardedFetch } from '../net/guarded-fetch.ts';
import { DEFAULT_LIMITS } from './limits.ts';
import { builtinSources } from './builtin-sources.ts';
import { backendEntries, makeTar, makeTarGz, serve, sha256, writeArchive, type TarEntry } from './testdata/fixtures.ts';
import { harness, noBase, workLeft, type Harness } from './testdata/harness.ts';

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

describe('names and links as real trees have them, the same from an archive and from a folder', () => {
  async function folder(h: Harness, name: string, fill: (dir: string) => Promise<void>): Promise<string> {
    const dir = join(h.src, name);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    await fill(dir);
    return dir;
  }

  it('keeps a backslash and a colon in a name as written (they are name characters on Linux), never rewriting it', async (t) => {
    const h = await harness(t);
    const live = join(h.backends, 'demo');
    const odd: TarEntry[] = [
      { name: 'back\\slash.txt', content: 'b' },
      { name: 'c:weird.txt', content: 'c' },
    ];
    await h.install(await writeArchive(h.src, 'names.tar.gz', await makeTarGz(backendEntries('v2', odd))));
    assert.equal(readFileSync(join(live, 'back\\slash.txt'), 'utf8'), 'b');
    assert.equal(readFileSync(join(live, 'c:weird.txt'), 'utf8'), 'c');
    assert.equal(existsSync(join(live, 'back')), false, 'no directory made of the part before the backslash');
    const dir = await folder(h, 'names', async (d) => {
      await writeFile(join(d, 'back\\slash.txt'), 'B');
      await writeFile(join(d, 'c:weird.txt'), 'C');
    });
    await h.install(dir);
    assert.deepEqual(readdirSync(live).sort(), ['back\\slash.txt', 'c:weird.txt', 'metadata.json', 'run.sh']);
  });

  it('installs a virtualenv from a local folder (bin/python -> python3 -> /usr/bin/python3), as from an archive', async (t) => {
    const h = await harness(t);
    const venv = await folder(h, 'venv-backend', async (d) => {
      await mkdir(join(d, 'venv/bin'), { recursive: true });
      await mkdir(join(d, 'venv/lib/python3/site-packages'), { recursive: true });
      await writeFile(join(d, 'venv/lib/python3/site-packages/backend.py'), 'print(1)\n');
      await symlink('/usr/bin/python3', join(d, 'venv/bin/python3'));
      await symlink('python3', join(d, 'venv/bin/python'));
      await symlink('lib', join(d, 'venv/lib64'));
    });
    await h.install(venv);
    const live = join(h.backends, 'demo');
    assert.equal(readlinkSync(join(live, 'venv/bin/python')), 'python3');
    assert.equal(readlinkSync(join(live, 'venv/bin/python3')), '/usr/bin/python3');
    assert.equal(readFileSync(join(live, 'venv/lib64/python3/site-packages/backend.py'), 'utf8'), 'print(1)\n');
    assert.deepEqual(readdirSync(h.sentinel), []);

    const chain = await folder(h, 'chain', async (d) => {
      await mkdir(join(d, 'lib'));
      await symlink('..', join(d, 'lib/up'));
      await symlink('lib/up/..', join(d, 'esc'));
    });
    await assert.rejects(h.install(chain), /symlink "esc" points outside the tree through other links/);
    assert.equal(readlinkSync(join(live, 'venv/bin/python')), 'python3', 'the refused folder left the live tree alone');
  });

  it('recreates a hardlink to a symlink (GNU tar writes a second hardlink of a symlink so), by the same link rules', async (t) => {
    const h = await harness(t);
    const tree = await folder(h, 'hardlinked-symlinks', async (d) => {
      await mkdir(join(d, 'bin'));
      await symlink('/usr/bin/python3', join(d, 'bin/python3'));
      await link(join(d, 'bin/python3'), join(d, 'bin/python3.11')); // link(2) does not follow a symlink on Linux
      await writeFile(join(d, 'bin/libfoo.so.1'), 'foo');
      await symlink('libfoo.so.1', join(d, 'bin/libfoo.so'));
      await link(join(d, 'bin/libfoo.so'), join(d, 'bin/libfoo-again.so'));
    });
    const archive = join(h.src, 'hardlinked-symlinks.tar.gz');
    execFileSync('tar', ['--sort=name', '-czf', archive, '-C', tree, '.']);
    assert.match(execFileSync('tar', ['-tvzf', archive], { encoding: 'utf8' }), /^h.* \.\/bin\/python3\.11 link to \.\/bin\/python3$/m, 'GNU tar wrote a hardlink entry');
    await h.install(archive);
    const live = join(h.backends, 'demo');
    assert.equal(readlinkSync(join(live, 'bin/python3.11')), '/usr/bin/python3');
    assert.equal(readlinkSync(join(live, 'bin/libfoo-again.so')), 'libfoo.so.1');
    assert.equal(readFileSync(join(live, 'bin/libfoo-again.so'), 'utf8'), 'foo');

    const h2 = await harness(t);
    const climbing: TarEntry[] = [
      { name: 'lib/up', type: 'symlink', linkname: '..' },
      { name: 'up', type: 'link', linkname: 'lib/up' },
    ];
    await expectRejected(h2, backendEntries('v2', climbing), /symlink "up" points outside the tree \(\.\.\)/);
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

  it('refuses hardlinks out of the tree or to anything but an earlier regular file or symlink', async (t) => {
    const h = await harness(t);
    await expectRejected(h, backendEntries('v2', [{ name: 'hl', type: 'link', linkname: '../../sentinel/x' }]), /hardlink "hl" points outside/);
    await expectRejected(h, backendEntries('v2', [{ name: 'hl', type: 'link', linkname: 'lib' }]), /hardlink "hl" must point at a regular file or symlink extracted earlier/);
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
    await expectRejected(h, plain.subarray(0, plain.length - 100 * 1024), /corrupt or truncated: unexpected end of data/);
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

  /** A server that sends `bytes` every 100 ms, forever. */
  async function dripping(t: TestContext, bytes: number): Promise<string> {
    const server = await serve((_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write(Buffer.alloc(bytes)), 100);
      res.once('close', () => clearInterval(timer));
    });
    t.after(() => server.close());
    return server.url;
  }

  it('gives up on a server that drips its tarball', async (t) => {
    const h = await harness(t);
    const url = await dripping(t, 1);
    const fetch = guardedFetch(globalThis.fetch, { headersMs: 300, lowSpeedBytes: 1024, lowSpeedWindowMs: 300 });
    await rejectsInstall(h, `${url}/slow.tgz`, /slow\.tgz: stalled: less than 1024 bytes in 0\.3 s/, { fetch });
  });

  it('gives up on a server dripping just fast enough for the stall rule, naming the rate it averaged', async (t) => {
    const h = await harness(t);
    const url = await dripping(t, 1100);
    const limits = { headersMs: 300, lowSpeedBytes: 1024, lowSpeedWindowMs: 300, minRateBytesPerSec: 16 * 1024, minRateWindowMs: 1000 };
    const started = Date.now();
    await rejectsInstall(h, `${url}/drip.tgz`, /drip\.tgz: too slow: \d+(\.\d)? KiB\/s averaged over the last 1 s, under the 16 KiB\/s minimum/, {
      fetch: guardedFetch(globalThis.fetch, limits),
    });
    assert.ok(Date.now() - started < 5000, 'given up on within a few windows');
  });

  it('copies a local directory within the entry limit, stops on cancel, and never copies the home', async (t) => {
    const h = await harness(t);
    const limits = { ...DEFAULT_LIMITS, maxEntries: 8 };
    await rejectsInstall(h, await treeOf(h, 10), /tree-10 holds more than 8 entries, the install entry limit/, { limits });
    const cancelled = new AbortController();
    cancelled.abort();
    await rejectsInstall(h, await treeOf(h, 3), /aborted/i, { signal: cancelled.signal });
    await rejectsInstall(h, h.root, /is the Hangar home .*, so it cannot be a backend's source/, { home: h.root });
    await rejectsInstall(h, join(h.root, '..'), /holds the Hangar home .*, so it cannot be a backend's source/, { home: h.root });
    await h.install(await treeOf(h, 3), { home: h.root });
    assert.ok(existsSync(join(h.backends, 'demo', 'f2')), 'a folder beside the home is fine');
  });

  it('never copies the backends directory: as the source, inside it, or reached through a symlink', async (t) => {
    const h = await harness(t);
    const started = Date.now();
    await rejectsInstall(h, h.backends, /backends is the backends directory .*, so it cannot be a backend's source/);
    await rejectsInstall(h, join(h.backends, 'demo'), /demo is inside the backends directory /);
    await rejectsInstall(h, join(h.backends, '.hangar'), /\.hangar is inside the backends directory /);
    const toBackends = join(h.src, 'to-backends');
    const toHome = join(h.src, 'to-home');
    await mkdir(h.src, { recursive: true });
    await symlink(h.backends, toBackends);
    await symlink(h.root, toHome);
    await rejectsInstall(h, toBackends, /to-backends is the backends directory /);
    await rejectsInstall(h, `${toHome}/backends`, /to-home\/backends is the backends directory /);
    await rejectsInstall(h, toHome, /to-home is the Hangar home /, { home: h.root });
    await rejectsInstall(h, toHome, /to-home holds the backends directory /, { home: join(h.root, 'elsewhere') });
    assert.ok(Date.now() - started < 5000, 'refused at once, not after copying into itself');
  });

  it('recognises the home and the backends directory through a bind mount, by device and inode', async (t) => {
    const h = await harness(t);
    const mounts = join(h.src, 'mnt');
    const homeMount = join(mounts, 'home');
    const holder = join(h.src, 'holder');
    await mkdir(homeMount, { recursive: true });
    await mkdir(join(holder, 'inner', 'backends-here'), { recursive: true });
    await writeFile(join(holder, 'run.sh'), '#!/bin/sh\n');
    try {
      execFileSync('mount', ['--bind', h.root, homeMount], { stdio: 'pipe' });
    } catch (err) {
      console.error(`\n*** SKIPPING the bind-mount test: cannot bind-mount here (${String(err).split('\n')[0]}) ***\n`);
      t.skip('mount --bind failed');
      return;
    }
    try {
      execFileSync('mount', ['--bind', h.backends, join(holder, 'inner', 'backends-here')], { stdio: 'pipe' });
      try {
        await rejectsInstall(h, homeMount, /mnt\/home is the Hangar home /, { home: h.root });
        await rejectsInstall(h, join(homeMount, 'backends'), /mnt\/home\/backends is the backends directory /);
        await rejectsInstall(h, join(homeMount, 'backends', 'demo'), /is inside the backends directory /);
        await rejectsInstall(h, holder, /holder holds the backends directory .* at "inner\/backends-here"/);
      } finally {
        execFileSync('umount', [join(holder, 'inner', 'backends-here')]);
      }
    } finally {
      execFileSync('umount', [homeMount]); // before the temp root is removed through it
    }
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
    await assert.rejects(h2.install(outside), /^HangarError: backend "demo": symlink "escape" points outside the tree \(\.\.\/\.\.\/sentinel\)/);
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
