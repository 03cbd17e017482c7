// The compression-bomb rule, from every archive source (local .tar.gz, http through the guarded fetch, OCI from a
// real registry): archives shaped like real backends install, and a true bomb is cut off early, leaving the live
// backend as it was.
import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { HangarError } from '../../../shared/errors.ts';
import { compressesThreeTimes, generated, incompressible, MiB, sha256OfFile, tarGzOfStreams, zeros, type ArchiveFile } from './testdata/big-files.ts';
import { ARCHIVE_SOURCES, startSourceRig, type ArchiveSource, type SourceRig } from './testdata/every-source.ts';
import { harness } from './testdata/harness.ts';

const GiB = 1024 * MiB;

describe('the compression-ratio rule, from every archive source', () => {
  let rig: SourceRig;
  let fixtures: string;
  const library = generated('lib/libLLVM.so.18.1', 112 * MiB, compressesThreeTimes);
  // Past the 256 MiB of zeros a download was once refused at (the compressed bytes of a download arrive as they inflate).
  const sparseZeros = generated('a-zeros.bin', 300 * MiB, zeros);
  const sparseRandom = generated('b-random.bin', 200 * MiB, incompressible);
  const uris = {} as Record<'library' | 'sparse' | 'bomb', Record<ArchiveSource, string>>;
  const archives = {} as Record<'library' | 'sparse' | 'bomb', ArchiveFile>;

  before(async () => {
    fixtures = await mkdtemp(join(tmpdir(), 'hangar-ratio-'));
    rig = await startSourceRig();
    archives.library = await tarGzOfStreams([library], join(fixtures, 'library.tar.gz'));
    archives.sparse = await tarGzOfStreams([sparseZeros, sparseRandom], join(fixtures, 'sparse.tar.gz'));
    archives.bomb = await tarGzOfStreams([generated('zeros.bin', GiB, zeros)], join(fixtures, 'bomb.tar.gz'));
    for (const name of ['library', 'sparse', 'bomb'] as const) uris[name] = await rig.publish(name, archives[name]);
  });

  after(async () => {
    await rig?.close();
    if (fixtures) await rm(fixtures, { recursive: true, force: true });
  });

  it('builds archives shaped as reported: a library gzip shrinks 3x, a 300 MiB sparse head at 2.5x overall, 1 GiB of zeros in a few MiB', () => {
    const ratio = (archive: ArchiveFile, bytes: number) => bytes / archive.size;
    assert.ok(ratio(archives.library, 112 * MiB) > 2.5 && ratio(archives.library, 112 * MiB) < 3.5, `library ${ratio(archives.library, 112 * MiB)}x`);
    assert.ok(ratio(archives.sparse, 500 * MiB) > 2.4 && ratio(archives.sparse, 500 * MiB) < 2.6, `sparse ${ratio(archives.sparse, 500 * MiB)}x`);
    assert.ok(archives.bomb.size < 4 * MiB, `bomb is ${archives.bomb.size} bytes`);
  });

  for (const source of ARCHIVE_SOURCES) {
    it(`installs a 112 MiB libLLVM-like library that gzip shrinks 3x, placed first, from ${source}`, async (t) => {
      const h = await harness(t);
      await h.install(uris.library[source], rig.request);
      assert.equal(await sha256OfFile(join(h.backends, 'demo', library.path)), library.sha256());
    });

    it(`installs 300 MiB of zeros followed by 200 MiB of random data (2.5x overall) from ${source}`, async (t) => {
      const h = await harness(t);
      await h.install(uris.sparse[source], rig.request);
      assert.equal(await sha256OfFile(join(h.backends, 'demo', sparseZeros.path)), sparseZeros.sha256());
      assert.equal(await sha256OfFile(join(h.backends, 'demo', sparseRandom.path)), sparseRandom.sha256());
    });

    it(`cuts off 1 GiB of zeros in a few MiB while reading it, from ${source}, leaving the live backend alone`, async (t) => {
      const h = await harness(t);
      await assert.rejects(h.install(uris.bomb[source], rig.request), (err: unknown) => {
        assert.ok(err instanceof HangarError, String(err));
        const match = /^backend "demo": archive expands more than 100 times its compressed size \((\d+\.\d) MiB from (\d+\.\d) MiB so far\): refused as a compression bomb$/.exec(err.message);
        assert.ok(match, err.message);
        assert.ok(Number(match[1]) < 512, `cut off after ${match[1]} MiB, long before the whole GiB`);
        return true;
      });
      h.assertUntouched();
      assert.equal((await stat(archives.bomb.data.path)).size, archives.bomb.size);
    });
  }
});
