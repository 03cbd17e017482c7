import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, test } from 'node:test';
import { HangarError } from '../../../shared/errors.ts';
import { Galleries } from './galleries.ts';
import { starterGallerySpec } from './location.ts';
import { until } from '../testing/until.ts';

const root = mkdtempSync(join(tmpdir(), 'hangar-galleries-'));
after(() => rmSync(root, { recursive: true, force: true }));

function write(path: string, lines: string[]): string {
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

function nextChange(galleries: Galleries, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no "changed" event')), timeoutMs);
    galleries.once('changed', (name: string) => {
      clearTimeout(timer);
      resolve(name);
    });
  });
}

const notFound = (pattern: RegExp) => (error: unknown) => error instanceof HangarError && error.code === 'not-found' && pattern.test(error.message);

test('qualified names, the same backend in two galleries, and metas resolved in gallery order as LocalAI does', async () => {
  const dir = join(root, 'two');
  mkdirSync(dir);
  const a = write(join(dir, 'alpha.yaml'), [
    '- name: llama',
    '  capabilities: {default: cpu-llama, nvidia: cuda-llama, amd: rocm-llama}',
    '- name: cpu-llama',
    '  uri: ./cpu-llama',
    '- name: tool',
    '  version: 1.0.0',
    '  uri: ./tool',
  ]);
  const b = write(join(dir, 'beta.yaml'), [
    '- name: Tool',
    '  version: 2.0.0',
    '  uri: ./tool',
    '- name: cpu-llama',
    '  uri: ./other-cpu-llama',
    '- name: cuda-llama',
    '  uri: ./cuda-llama',
  ]);
  const galleries = new Galleries({ specs: [{ location: a }, { location: pathToFileURL(b).href }] });
  try {
    assert.deepEqual(galleries.names(), ['alpha', 'beta']);
    assert.equal((await galleries.entries()).length, 6);

    const first = await galleries.find('tool');
    assert.deepEqual([first.gallery, first.version, first.baseDir, first.baseUrl], ['alpha', '1.0.0', dir, null]);
    assert.equal((await galleries.find('beta@tool')).version, '2.0.0', 'names match case-insensitively');
    assert.equal((await galleries.find('alpha@TOOL')).version, '1.0.0');
    await assert.rejects(galleries.find('alpha@cuda-llama'), notFound(/"alpha@cuda-llama": not in gallery "alpha"/));
    await assert.rejects(galleries.find('gamma@tool'), notFound(/no gallery named "gamma"/));
    await assert.rejects(galleries.find('nothing'), notFound(/"nothing": not in any gallery/));

    const cpu = await galleries.resolve('llama', 'default');
    assert.deepEqual([cpu.entry.gallery, cpu.entry.uri, cpu.meta?.name, cpu.capability], ['alpha', './cpu-llama', 'llama', 'default']);
    const cuda = await galleries.resolve('alpha@llama', 'nvidia');
    assert.deepEqual([cuda.entry.gallery, cuda.entry.name, cuda.capability], ['beta', 'cuda-llama', 'nvidia']);
    const noKey = await galleries.resolve('alpha@llama', 'nvidia-cuda-13');
    assert.deepEqual([noKey.entry.gallery, noKey.entry.name, noKey.capability], ['alpha', 'cpu-llama', 'default'], 'no vendor-parent step');
    const picked = await galleries.resolve('llama', 'nvidia-cuda-13', 'nvidia');
    assert.equal(picked.entry.name, 'cuda-llama', 'a build the user picked');
    await assert.rejects(galleries.resolve('llama', 'default', 'nvidia'), /"llama" build "cuda-llama" does not run on this machine \(capability "default"\)/);
    await assert.rejects(galleries.resolve('llama', 'amd'), notFound(/"llama": its "amd" build "rocm-llama" is in no gallery/));
    const concrete = await galleries.resolve('beta@tool', 'metal');
    assert.deepEqual([concrete.entry.version, concrete.meta, concrete.capability], ['2.0.0', null, 'metal']);
  } finally {
    galleries.close();
  }
});

test('gallery names: given, derived from the file or URL, made unique; bad names and locations are refused', () => {
  const names = new Galleries({
    specs: [
      { location: '/srv/one/index.yaml' },
      { location: '/srv/two/index.yml' },
      { name: 'two', location: '/srv/three/main.yaml' },
      { location: '/srv/four/main.yaml' },
      { location: 'https://Example.com:8443/galleries/backends.yaml' },
      starterGallerySpec('/opt/hangar/backends/index.yaml'),
    ],
  }).names();
  assert.deepEqual(names, ['one', 'two-2', 'two', 'main', 'example.com-8443-galleries-backends', 'starter']);
  assert.throws(() => new Galleries({ specs: [{ name: 'x', location: '/a.yaml' }, { name: 'x', location: '/b.yaml' }] }), /gallery name "x" is used twice/);
  assert.throws(() => new Galleries({ specs: [{ name: 'a@b', location: '/a.yaml' }] }), /must not contain "@"/);
  assert.throws(() => new Galleries({ specs: [{ location: 'ftp://host/index.yaml' }] }), /only local paths, file:\/\/ and http\(s\):\/\/ are supported/);
});

test('a broken gallery is skipped and reported; the others still load', async () => {
  const dir = join(root, 'broken');
  mkdirSync(dir);
  const good = write(join(dir, 'good.yaml'), ['- name: ok', '  uri: ./ok', '- license: mit', '- name: also-ok', '  uri: ./also']);
  const bad = write(join(dir, 'bad.yaml'), ['- name: x', '  tags: [unclosed', '- name: y']);
  const galleries = new Galleries({ specs: [{ location: bad }, { location: good }, { location: join(dir, 'missing.yaml') }] });
  try {
    assert.deepEqual(
      (await galleries.entries()).map((entry) => entry.name),
      ['ok', 'also-ok'],
    );
    const errors = galleries.problems();
    assert.equal(errors.length, 3);
    assert.equal(errors[0]!.gallery, 'bad');
    assert.match(errors[0]!.message, /^gallery "bad": invalid YAML: .*line \d+, column \d+$/);
    assert.deepEqual(errors[1], { gallery: 'good', message: 'gallery "good": entry 2 (line 3): has no "name"' });
    assert.deepEqual(errors[2], { gallery: 'missing', message: `gallery "missing": cannot read ${join(dir, 'missing.yaml')}: no such file` });
    await assert.rejects(galleries.find('bad@x'), notFound(/not in gallery "bad" \(gallery "bad": invalid YAML/));
  } finally {
    galleries.close();
  }
});

test('a live-edited local gallery shows the new version, after a "changed" event', async () => {
  const dir = join(root, 'live');
  mkdirSync(dir);
  const path = write(join(dir, 'live.yaml'), ['- name: tool', '  version: 1.0.0', '  uri: ./tool']);
  const galleries = new Galleries({ specs: [{ location: path }] });
  try {
    assert.equal((await galleries.find('tool')).version, '1.0.0');

    let changed = nextChange(galleries);
    write(path, ['- name: tool', '  version: 1.1.0', '  uri: ./tool', '- name: extra', '  uri: ./extra']);
    assert.equal(await changed, 'live');
    assert.equal((await galleries.find('tool')).version, '1.1.0');
    assert.equal((await galleries.entries()).length, 2);

    // An editor's save: write a temporary file, rename it over the index.
    changed = nextChange(galleries);
    write(join(dir, 'live.yaml.tmp'), ['- name: tool', '  version: 2.0.0', '  uri: ./tool']);
    renameSync(join(dir, 'live.yaml.tmp'), path);
    await changed;
    assert.equal((await galleries.find('tool')).version, '2.0.0');

    // With the watcher stopped, the size/mtime check on access still sees an edit.
    galleries.close();
    write(path, ['- name: tool', '  version: 3.0.0-rc.1', '  uri: ./tool']);
    assert.equal((await galleries.find('tool')).version, '3.0.0-rc.1');
  } finally {
    galleries.close();
  }
});

test('an http gallery: fetched once, relative uris resolve against baseUrl, refresh() picks up changes', async () => {
  let index = ['- name: remote', '  version: 1.0.0', '  uri: ../artifacts/remote.tar.gz'];
  let status = 200;
  const server: Server = createServer((request, response) => {
    if (request.url === '/galleries/main.yaml') {
      response.writeHead(status, { 'content-type': 'application/yaml' });
      response.end(status === 200 ? index.join('\n') : 'oops');
    } else if (request.url === '/artifacts/remote.tar.gz') {
      response.end('tarball bytes');
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/galleries/main.yaml`;
  let fetches = 0;
  const countingFetch: typeof fetch = (input, init) => {
    fetches++;
    return fetch(input, init);
  };
  const galleries = new Galleries({ specs: [{ name: 'remote', location: url }], fetch: countingFetch });
  try {
    const entry = await galleries.find('remote');
    assert.deepEqual([entry.baseUrl, entry.baseDir, entry.version], [url, null, '1.0.0']);
    const artifact = await fetch(new URL(entry.uri!, entry.baseUrl!));
    assert.equal(await artifact.text(), 'tarball bytes');
    await galleries.entries();
    assert.equal(fetches, 1, 'a remote gallery is cached in memory');

    index = ['- name: remote', '  version: 1.1.0', '  uri: ../artifacts/remote.tar.gz'];
    assert.equal((await galleries.find('remote')).version, '1.0.0', 'no refetch until refresh()');
    const changed = nextChange(galleries);
    await galleries.refresh();
    assert.equal(await changed, 'remote');
    assert.equal((await galleries.find('remote')).version, '1.1.0');

    status = 500;
    await galleries.refresh();
    assert.equal((await galleries.find('remote')).version, '1.1.0', 'a failed refresh keeps the last good copy');
    assert.deepEqual(galleries.problems(), [{ gallery: 'remote', message: `gallery "remote": cannot fetch ${url}: HTTP 500 Internal Server Error` }]);
    assert.equal(fetches, 3);
  } finally {
    galleries.close();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('a gallery that expands a 1 MiB anchor 9,000 times is refused quickly, with the reason, and no memory blow-up', async () => {
  const file = join(root, 'bomb.yaml');
  const lines = [`- name: first`, `  description: &big ${'x'.repeat(1 << 20)}`];
  for (let i = 0; i < 9000; i++) lines.push(`- name: e${i}`, '  description: *big');
  write(file, lines);
  const rssBefore = process.memoryUsage().rss;
  const galleries = new Galleries({ specs: [{ name: 'bomb', location: file }] });
  try {
    assert.deepEqual(await galleries.entries(), []);
    const [problem] = galleries.problems();
    assert.equal(problem?.gallery, 'bomb');
    assert.match(problem?.message ?? '', /anchors expand to more than 64\.0 MiB of text; refused/);
    assert.ok(process.memoryUsage().rss - rssBefore < 512 * 1024 * 1024, 'well under half a GiB on top');
  } finally {
    galleries.close();
  }
});

test('a gallery file over 16 MiB is refused without being read', async () => {
  const file = join(root, 'huge.yaml');
  writeFileSync(file, Buffer.alloc(17 * 1024 * 1024, '#'));
  const galleries = new Galleries({ specs: [{ name: 'huge', location: file }] });
  try {
    assert.deepEqual(await galleries.entries(), []);
    assert.match(galleries.problems()[0]?.message ?? '', /cannot read .*huge\.yaml: the file is 17\.0 MiB, over the 16\.0 MiB limit/);
  } finally {
    galleries.close();
  }
});

test('a gallery path that is a FIFO or a device is refused without being read: nothing blocks, nothing reads forever', { timeout: 10_000 }, async () => {
  const fifo = join(root, 'fifo.yaml');
  execFileSync('mkfifo', [fifo]);
  const galleries = new Galleries({ specs: [{ name: 'fifo', location: fifo }, { name: 'zero', location: '/dev/zero' }] });
  try {
    assert.deepEqual(await galleries.entries(), []);
    assert.deepEqual(galleries.problems().map((p) => p.message), [
      `gallery "fifo": cannot read ${fifo}: it is not a file`,
      'gallery "zero": cannot read /dev/zero: it is not a file',
    ]);
  } finally {
    galleries.close();
  }
});

test('a remote gallery that streams without end is cut off at 16 MiB', async () => {
  let sent = 0;
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/yaml' });
    const chunk = Buffer.alloc(256 * 1024, '#');
    const pump = () => {
      while (sent < 64 * 1024 * 1024 && res.write(chunk)) sent += chunk.length;
      if (sent >= 64 * 1024 * 1024) res.end();
    };
    res.on('drain', pump);
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/index.yaml`;
  const galleries = new Galleries({ specs: [{ name: 'endless', location: url }] });
  try {
    assert.deepEqual(await galleries.entries(), []);
    assert.match(galleries.problems()[0]?.message ?? '', /cannot fetch .*: the index passed the 16\.0 MiB limit while downloading/);
    assert.ok(sent < 48 * 1024 * 1024, `the download stopped early (${sent} bytes sent)`);
  } finally {
    galleries.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("an index's parse is kept on disk and read back at the next start; a changed text is parsed anew", async () => {
  const dir = join(root, 'cached');
  mkdirSync(dir);
  const index = write(join(dir, 'index.yaml'), ['- name: echo', '  version: 1.0.0', '  description: from the yaml']);
  const cache = join(dir, 'parses');
  const first = new Galleries({ specs: [{ location: index }], parseCacheDir: cache });
  assert.equal((await first.entries())[0]?.description, 'from the yaml');
  first.close();
  const kept = await until('the parse kept', () => {
    const files = existsSync(cache) ? readdirSync(cache).filter((f) => f.endsWith('.json')) : [];
    return files.length > 0 ? files : undefined;
  }, 15_000);
  assert.equal(kept.length, 1);
  // The next start reads what was kept, not the YAML: a kept parse edited on disk shows through.
  const file = join(cache, kept[0]!);
  writeFileSync(file, readFileSync(file, 'utf8').replace('from the yaml', 'from the kept parse'));
  const second = new Galleries({ specs: [{ location: index }], parseCacheDir: cache });
  assert.equal((await second.entries())[0]?.description, 'from the kept parse');
  second.close();
  write(index, ['- name: echo', '  version: 2.0.0']);
  const third = new Galleries({ specs: [{ location: index }], parseCacheDir: cache });
  assert.equal((await third.entries())[0]?.version, '2.0.0');
  third.close();
});
