// A backend directory whose metadata.json is not a record at all: a link to a device (as LocalAI leaves one an image
// put at that name, writing its record through it), a FIFO, or a file far larger than any record. The listing and a
// swap read it without reading forever or waiting forever, and show the backend as broken, saying why.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { backendEntries, makeTarGz, writeArchive } from './testdata/fixtures.ts';
import { harness } from './testdata/harness.ts';

const RECORD = 'metadata.json';

describe('a metadata.json that is not a record', () => {
  it('is not read: the backend is listed as broken, saying why, and the others as they are', { timeout: 20_000 }, async (t) => {
    const h = await harness(t);
    const archive = await writeArchive(h.src, 'other.tgz', await makeTarGz(backendEntries('o')));
    for (const name of ['fifo', 'zero', 'huge']) {
      await h.install(archive, { name });
      await rm(join(h.backends, name, RECORD));
    }
    execFileSync('mkfifo', [join(h.backends, 'fifo', RECORD)]);
    await symlink('/dev/zero', join(h.backends, 'zero', RECORD));
    execFileSync('truncate', ['-s', '64M', join(h.backends, 'huge', RECORD)]);
    const broken = Object.fromEntries((await h.store.list()).map((b) => [b.name, b.broken]));
    assert.deepEqual(broken, {
      demo: null,
      fifo: `${RECORD} is unreadable: it is a FIFO, not a file`,
      zero: `${RECORD} is unreadable: it is a device, not a file`,
      huge: `${RECORD} is unreadable: it is 64.0 MiB, more than a record of an install holds`,
    });
  });

  it('does not hold up a reinstall over it, nor the listing of the tree it replaced', { timeout: 20_000 }, async (t) => {
    const h = await harness(t);
    const archive = await writeArchive(h.src, 'v2.tgz', await makeTarGz(backendEntries('v2')));
    await rm(join(h.backends, 'demo', RECORD));
    execFileSync('mkfifo', [join(h.backends, 'demo', RECORD)]);
    await h.install(archive, { details: { version: '2.0.0' } });
    const [demo] = await h.store.list();
    assert.deepEqual([demo?.metadata?.version, demo?.broken, demo?.hasPrevious], ['2.0.0', null, true]);
  });
});
