// Trees shaped like real backends install from every source (a local folder, a local .tar.gz, http through the
// guarded fetch, an OCI image from a real registry), exactly as they are, and nothing lands outside its place.
// The 100,000-file version of the small-file part is bench/legit-trees.bench.ts.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MiB, tarGzOf, type ArchiveFile } from './testdata/big-files.ts';
import { ARCHIVE_SOURCES, startSourceRig, type ArchiveSource, type SourceRig } from './testdata/every-source.ts';
import { harness } from './testdata/harness.ts';
import { buildLegitTree, DEEP_FILE, fingerprint, FIRST_FILE, ODD_NAMES, UNICODE_NAMES, type Fingerprint } from './testdata/legit-tree.ts';

/**
 * The smallest first file the old ratio rule refused from every source: it judged the declared size against the
 * compressed bytes read so far, 2 MiB from a local file (1 MiB reads), so it refused past 200 MiB there, and past
 * its 64 MiB floor over http and OCI.
 */
const INCOMPRESSIBLE_BYTES = 208 * MiB;
/** The 112 MiB library of the report is ratio.test.ts's, from every archive source; here it is one part of many. */
const LIBRARY_BYTES = 32 * MiB;
const SMALL_FILES = 20_000;

describe('legitimate trees install from every source, exactly as they are', () => {
  let rig: SourceRig;
  let fixtures: string;
  let tree: string;
  let archive: ArchiveFile;
  let uris: Record<ArchiveSource, string>;
  let expected: Fingerprint;

  before(async () => {
    fixtures = await mkdtemp(join(tmpdir(), 'hangar-legit-'));
    rig = await startSourceRig();
    tree = join(fixtures, 'tree');
    const names = await buildLegitTree(tree, { incompressibleBytes: INCOMPRESSIBLE_BYTES, libraryBytes: LIBRARY_BYTES, smallFiles: SMALL_FILES });
    archive = await tarGzOf(tree, names, join(fixtures, 'legit.tar.gz'));
    uris = await rig.publish('legit', archive);
    expected = await fingerprint(tree);
  });

  after(async () => {
    await rig?.close();
    if (fixtures) await rm(fixtures, { recursive: true, force: true });
  });

  it('the archive is as GNU tar writes such a tree: the big file first, hardlinks to a file and to symlinks, names without ./', () => {
    const listing = execFileSync('tar', ['--quoting-style=literal', '-tvzf', archive.data.path], { encoding: 'utf8', maxBuffer: 64 * MiB }).split('\n');
    assert.match(listing[0]!, new RegExp(` ${INCOMPRESSIBLE_BYTES} .* ${FIRST_FILE}$`));
    assert.ok(listing.some((l) => /^h.* venv\/bin\/python3\.11 link to venv\/bin\/python3$/.test(l)), 'a hardlink to an absolute symlink');
    assert.ok(listing.some((l) => /^h.* lib\/libfoo\.so link to lib\/libfoo-compat\.so$/.test(l)), 'a hardlink to a relative symlink');
    assert.ok(listing.some((l) => /^h.* lib\/libfoo\.so\.1\.0 link to lib\/libfoo\.so\.1$/.test(l)), 'a hardlink to a file');
    for (const name of ODD_NAMES) assert.ok(listing.some((l) => l.endsWith(` ${name}`)), name);
    assert.ok(expected.entries.size > SMALL_FILES, `${expected.entries.size} entries`);
  });

  for (const source of ['local dir', ...ARCHIVE_SOURCES] as const) {
    it(`installs from ${source}`, async (t) => {
      const h = await harness(t);
      await h.install(source === 'local dir' ? tree : uris[source], rig.request);
      const live = join(h.backends, 'demo');
      const installed = await fingerprint(live, ['metadata.json']);
      assert.deepEqual(installed.entries, expected.entries);
      assert.equal(readlinkSync(join(live, 'venv/bin/python3.11')), '/usr/bin/python3');
      assert.equal(readFileSync(join(live, 'venv/lib64/python3.11/site-packages/backend.py'), 'utf8'), 'import grpc\n');
      for (const name of [...UNICODE_NAMES, ...ODD_NAMES, DEEP_FILE]) assert.equal(readFileSync(join(live, name), 'utf8'), `${name}\n`);
      if (source !== 'local dir') assert.deepEqual(installed.hardlinks, [['lib/libfoo.so.1', 'lib/libfoo.so.1.0']], 'hardlinks stay hardlinks');
      h.assertNothingElse();
    });
  }
});
