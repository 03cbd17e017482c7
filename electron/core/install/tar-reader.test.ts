import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { readTar } from './tar-reader.ts';
import { makeTar, tempRoot } from './testdata/fixtures.ts';

interface Seen {
  name: string;
  type: string;
  linkname: string;
  mode: number;
  content: string;
  whole: boolean;
}

/** Feeds `archive` in pieces of `piece` bytes, so headers and bodies straddle chunk boundaries. */
async function* pieces(archive: Buffer, piece: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < archive.length; at += piece) yield archive.subarray(at, at + piece);
}

async function read(archive: Buffer, piece = archive.length, wholeUpTo = 1024): Promise<Seen[]> {
  const seen: Seen[] = [];
  for await (const { header, body } of readTar(pieces(archive, piece), { wholeUpTo })) {
    const whole = Array.isArray(body);
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk);
    seen.push({
      name: header.name,
      type: String(header.type),
      linkname: header.linkname ?? '',
      mode: header.mode ?? 0,
      content: Buffer.concat(chunks).toString(),
      whole,
    });
  }
  return seen.sort((a, b) => a.name.localeCompare(b.name));
}

/** A tree with what each tar format must spell in its own way: long names and link targets, a large body. */
async function sampleTree(root: string): Promise<string> {
  const tree = join(root, 'tree');
  const deep = join(tree, 'd'.repeat(90), 'e'.repeat(90));
  await mkdir(deep, { recursive: true });
  await writeFile(join(deep, `${'f'.repeat(120)}.txt`), 'deep');
  await writeFile(join(tree, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
  await writeFile(join(tree, 'big.bin'), 'x'.repeat(5000));
  await symlink(`${'d'.repeat(90)}/${'e'.repeat(90)}/${'f'.repeat(120)}.txt`, join(tree, 'to-deep'));
  await writeFile(join(tree, 'ünïcode ✓'), 'u');
  // "./" and 97 letters and "/": the 100 characters a header keeps of this long name end in a slash.
  await mkdir(join(tree, 'a'.repeat(97)));
  await writeFile(join(tree, 'a'.repeat(97), 'file.txt'), 'a');
  return tree;
}

/** GNU tar's archive of `tree`; it still writes one when it must leave out what the format cannot spell. */
function tarOf(tree: string, format: string): Buffer {
  return spawnSync('tar', [`--format=${format}`, '-cf', '-', '-C', tree, '--sort=name', '.'], { maxBuffer: 64 * 1024 * 1024 }).stdout;
}

describe('readTar', () => {
  it('reads what GNU tar writes in gnu, pax and ustar formats alike, whatever the chunk boundaries', async (t) => {
    const tree = await sampleTree(await tempRoot(t));
    const expected = await read(tarOf(tree, 'gnu'));
    const names = expected.map((e) => e.name);
    assert.ok(names.includes(`./${'d'.repeat(90)}/${'e'.repeat(90)}/${'f'.repeat(120)}.txt`), names.join('\n'));
    assert.ok(names.includes('./ünïcode ✓'));
    assert.equal(expected.find((e) => e.name === `./${'a'.repeat(97)}/file.txt`)?.type, 'file', 'a long name is typed by itself, not its cut');
    const link = expected.find((e) => e.name === './to-deep')!;
    assert.equal(link.type, 'symlink');
    assert.equal(link.linkname.length, 90 + 1 + 90 + 1 + 124);
    const run = expected.find((e) => e.name === './run.sh')!;
    assert.deepEqual([run.type, run.mode & 0o777, run.content, run.whole], ['file', 0o755, '#!/bin/sh\n', true]);
    const big = expected.find((e) => e.name === './big.bin')!;
    assert.deepEqual([big.content.length, big.whole], [5000, false], 'a body over wholeUpTo streams');
    assert.equal(expected.find((e) => e.name === './')?.type, 'directory');

    for (const format of ['pax', 'gnu']) {
      const archive = tarOf(tree, format);
      for (const piece of [1, 7, 511, 513, 4096]) {
        assert.deepEqual(await read(archive, piece), expected, `${format} in pieces of ${piece}`);
      }
    }
    // ustar spells names of up to 256 characters (a prefix and a name): GNU tar leaves longer ones out (and cuts the
    // long link target, which is not compared), and what it writes with a prefix reads back whole.
    const notLink = (e: Seen) => e.name !== './to-deep';
    const ustar = await read(tarOf(tree, 'ustar'), 100);
    assert.deepEqual(ustar.filter(notLink), expected.filter((e) => notLink(e) && e.name.length <= 256));
    assert.ok(ustar.some((e) => e.name.length > 100), 'one name needs the ustar prefix');
  });

  it('takes a v7 entry whose name ends in a slash for a directory', async (t) => {
    const tree = join(await tempRoot(t), 'tree');
    await mkdir(join(tree, 'sub'), { recursive: true });
    await writeFile(join(tree, 'sub', 'f'), 'f');
    const seen = await read(tarOf(tree, 'v7'));
    assert.deepEqual(
      seen.map((e) => [e.name, e.type]),
      [
        ['./', 'directory'],
        ['./sub/', 'directory'],
        ['./sub/f', 'file'],
      ],
    );
  });

  it('refuses a damaged header, a cut body and an archive without its end marker, with what is wrong', async () => {
    const archive = await makeTar([{ name: 'a', content: 'a'.repeat(3000) }, { name: 'b', content: 'b' }]);
    const damaged = Buffer.from(archive);
    const inB = 512 + 3072 + 10;
    damaged[inB] = damaged[inB]! ^ 0xff;
    await assert.rejects(read(damaged), /corrupt or truncated: the header at byte 3584 has a bad checksum/);
    await assert.rejects(read(archive.subarray(0, 2000)), /corrupt or truncated: unexpected end of data/);
    await assert.rejects(read(archive.subarray(0, 2000), 2000, 8192), /corrupt or truncated: unexpected end of data/);
    await assert.rejects(read(archive.subarray(0, 512 + 3072 + 1024)), /truncated: it ends without an end-of-archive marker/);
    await assert.rejects(read(Buffer.alloc(0)), /truncated: it ends without an end-of-archive marker/);
  });

  it('reads the whole input past the end marker, so a digest of the input covers every byte', async () => {
    const archive = Buffer.concat([await makeTar([{ name: 'a', content: 'a' }]), Buffer.alloc(10 * 1024)]);
    let total = 0;
    for await (const entry of readTar(pieces(archive, 1000), { wholeUpTo: 1024, onBytes: (bytes) => void (total = bytes) })) void entry;
    assert.equal(total, archive.length);
  });

  it('lets onBytes refuse to go on', async () => {
    const archive = await makeTar([{ name: 'a', content: 'a'.repeat(100_000) }]);
    const reading = read(archive, 4096, 1 << 20);
    await assert.rejects(
      (async () => {
        for await (const entry of readTar(pieces(archive, 4096), { wholeUpTo: 1 << 20, onBytes: (b) => assert.ok(b < 50_000, 'too many bytes') })) void entry;
      })(),
      /too many bytes/,
    );
    assert.equal((await reading)[0]!.content.length, 100_000);
  });
});
