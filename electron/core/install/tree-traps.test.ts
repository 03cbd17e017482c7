// Trees that set traps for the installer's own steps after extraction: the metadata.json it writes and the run.sh it
// makes executable. Whatever the tree holds at those names, from an archive or from a folder, nothing outside the
// tree is written or changed, and a tree the step cannot finish is refused in words.
import assert from 'node:assert/strict';
import { lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { HangarError } from '../../../shared/errors.ts';
import { backendEntries, makeTarGz, writeArchive, type TarEntry } from './testdata/fixtures.ts';
import { harness, type Harness } from './testdata/harness.ts';

/** The same tree as an archive and as a folder: `links` are [name, target] symlinks beside run.sh. */
async function sources(h: Harness, name: string, links: Array<[string, string]>, runSh = true): Promise<string[]> {
  const base = backendEntries('v2').filter((e) => runSh || e.name !== 'run.sh');
  const entries: TarEntry[] = [...base, ...links.map(([n, target]): TarEntry => ({ name: n, type: 'symlink', linkname: target }))];
  const archive = await writeArchive(h.src, `${name}.tar.gz`, await makeTarGz(entries));
  const folder = join(h.src, name);
  await mkdir(folder, { recursive: true });
  if (runSh) await writeFile(join(folder, 'run.sh'), '#!/bin/sh\nexec true\n', { mode: 0o755 });
  for (const [n, target] of links) await symlink(target, join(folder, n));
  return [archive, folder];
}

async function rejected(h: Harness, uri: string, cause: RegExp): Promise<void> {
  await assert.rejects(h.install(uri), (err: unknown) => {
    assert.ok(err instanceof HangarError, String(err));
    assert.equal(err.code, 'bad-input');
    assert.match(err.message, cause);
    return true;
  });
  h.assertUntouched();
}

describe('the installer\'s own writes into a new tree', () => {
  it('metadata.json and its temporary name, links out of the tree, are replaced: the record is written in the tree, nothing through them', async (t) => {
    const h = await harness(t);
    const record = join(h.sentinel, 'record');
    for (const uri of await sources(h, 'record-links', [['metadata.json.tmp', record], ['metadata.json', join(h.sentinel, 'meta')]])) {
      await h.install(uri);
      assert.deepEqual(readdirSync(h.sentinel), [], `${uri}: nothing written through a link`);
      const written = join(h.backends, 'demo', 'metadata.json');
      assert.ok(lstatSync(written).isFile(), `${uri}: the record is a file of the tree`);
      assert.equal((JSON.parse(readFileSync(written, 'utf8')) as { name: string }).name, 'demo');
      h.assertNothingElse();
    }
  });

  it('a run.sh that is a link to a file outside the tree is started as it is: that file\'s mode is not changed', async (t) => {
    const h = await harness(t);
    const outside = join(h.src, 'somebody-elses-script');
    await writeFile(outside, '#!/bin/sh\nexec true\n', { mode: 0o640 });
    for (const uri of await sources(h, 'run-link', [['run.sh', outside]], false)) {
      await h.install(uri);
      assert.equal(statSync(outside).mode & 0o7777, 0o640, uri);
      h.assertNothingElse();
    }
  });

  it('a metadata.json that is a directory is refused in words, the live tree untouched', async (t) => {
    const h = await harness(t);
    const archive = await writeArchive(h.src, 'meta-dir.tar.gz', await makeTarGz(backendEntries('v2', [{ name: 'metadata.json/', type: 'directory', mode: 0o755 }])));
    const folder = join(h.src, 'meta-dir');
    await mkdir(join(folder, 'metadata.json'), { recursive: true });
    await writeFile(join(folder, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    for (const uri of [archive, folder]) await rejected(h, uri, /^backend "demo": metadata\.json is a directory, where LocalAI records the install$/);
  });

  it('a name longer than the file system holds is refused in words, cut short, the live tree untouched', async (t) => {
    const h = await harness(t);
    const part = 'a'.repeat(300);
    const deep = Array.from({ length: 40 }, () => 'b'.repeat(200)).join('/');
    for (const name of [part, `${deep}/file`]) {
      const archive = await writeArchive(h.src, 'long.tar.gz', await makeTarGz(backendEntries('v2', [{ name, content: 'x' }])));
      const bytes = Buffer.byteLength(name);
      await rejected(h, archive, new RegExp(`^backend "demo": entry "${name.slice(0, 60)}…" \\(${bytes} bytes\\) is a longer name than this file system holds$`));
    }
    // A folder whose deepest path fits where it is, but not in the longer path of the staging directory.
    const folder = join(h.src, 'long');
    const fits = 4090 - folder.length - '/file'.length;
    const path = join(folder, ...Array.from({ length: Math.ceil(fits / 201) }, (_, i) => 'c'.repeat(Math.min(200, fits - i * 201 - 1))).filter(Boolean));
    await mkdir(path, { recursive: true });
    await writeFile(join(path, 'file'), 'x');
    await writeFile(join(folder, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    await rejected(h, folder, /^backend "demo": entry "c{60}…" \(\d+ bytes\) is a longer name than this file system holds$/);
  });
});
