import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { extractArchive, extractTar } from './extract.ts';
import { makeTar, makeTarGz, tempRoot, type TarEntry } from './testdata/fixtures.ts';

async function lowerLayer(dest: string): Promise<void> {
  for (const [path, body] of [['a/x', 'x'], ['a/y', 'y'], ['b/old', 'old'], ['b/sub/deep', 'deep'], ['keep/k', 'k']] as const) {
    await mkdir(join(dest, path, '..'), { recursive: true });
    await writeFile(join(dest, path), body);
  }
}

describe('extractTar', () => {
  it('applies OCI whiteouts against earlier layers when asked', async (t) => {
    const dest = await tempRoot(t);
    await lowerLayer(dest);
    const layer: TarEntry[] = [
      { name: 'a/.wh.x' },
      { name: 'b/new', content: 'new' },
      { name: 'b/.wh..wh..opq' },
      { name: 'c/.wh.absent' },
    ];
    const stats = await extractTar(Readable.from(await makeTar(layer)), dest, { whiteouts: true });
    assert.equal(stats.entries, 4);
    assert.deepEqual(readdirSync(join(dest, 'a')), ['y']);
    assert.deepEqual(readdirSync(join(dest, 'b')), ['new'], 'opaque dir keeps only this layer');
    assert.equal(readFileSync(join(dest, 'keep', 'k'), 'utf8'), 'k');
    assert.equal(existsSync(join(dest, 'c')), false, 'whiteout entries are not written');
  });

  it('treats .wh. files as ordinary files without whiteouts, and refuses a whiteout naming ".."', async (t) => {
    const dest = await tempRoot(t);
    await lowerLayer(dest);
    await extractTar(Readable.from(await makeTar([{ name: 'a/.wh.x' }])), dest);
    assert.deepEqual(readdirSync(join(dest, 'a')).sort(), ['.wh.x', 'x', 'y']);
    await assert.rejects(extractTar(Readable.from(await makeTar([{ name: 'a/.wh...' }])), dest, { whiteouts: true }), /whiteout "a\/\.wh\.\.\." names no file/);
    assert.equal(existsSync(join(dest, 'a')), true);
  });

  it('handles pax long names, long link targets, read-only dirs and in-tree hardlinks', async (t) => {
    const dest = await tempRoot(t);
    const deep = `${'d'.repeat(90)}/${'e'.repeat(90)}/${'f'.repeat(120)}.txt`;
    const entries: TarEntry[] = [
      { name: 'ro/', type: 'directory', mode: 0o500 },
      { name: 'ro/inside', content: 'ok' },
      { name: deep, content: 'deep' },
      { name: 'to-deep', type: 'symlink', linkname: deep },
      { name: 'hard', type: 'link', linkname: 'ro/inside' },
    ];
    await extractArchive(Readable.from(await makeTarGz(entries)), dest);
    assert.equal(readFileSync(join(dest, 'to-deep'), 'utf8'), 'deep');
    assert.equal(readFileSync(join(dest, 'ro', 'inside'), 'utf8'), 'ok');
    assert.equal(statSync(join(dest, 'ro')).mode & 0o777, 0o700);
    assert.equal(statSync(join(dest, 'hard')).ino, statSync(join(dest, 'ro', 'inside')).ino);
  });

  it('stops at once when aborted while its input has stalled, plain or gzipped', { timeout: 10_000 }, async (t) => {
    for (const head of [Buffer.alloc(100, 1), Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3])]) {
      const stalled = new PassThrough();
      stalled.write(head); // and nothing more, ever
      const abort = new AbortController();
      const extracting = extractArchive(stalled, await tempRoot(t), { signal: abort.signal });
      setTimeout(() => abort.abort(), 50);
      await assert.rejects(extracting, { name: 'AbortError' });
    }
  });

  it('refuses an empty stream as truncated', async (t) => {
    const dest = await tempRoot(t);
    await assert.rejects(extractArchive(Readable.from([]), dest), /truncated/);
  });
});
