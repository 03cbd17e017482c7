// Uris a gallery entry may give that name nothing to fetch. A local one that names neither a file nor a directory (a
// FIFO, a device) is refused before it is opened: opening a FIFO waits for a writer that may never come, holding one
// of the few threads every file operation of the node needs, and a device such as /dev/zero never ends. A malformed
// URL, or a file:// URL naming another host, is the entry's fault, said in words.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { HangarError } from '../../../shared/errors.ts';
import { harness } from './testdata/harness.ts';

describe('a local uri that is neither a file nor a directory', () => {
  it('is refused at once, naming what it is, the live tree untouched', { timeout: 10_000 }, async (t) => {
    const h = await harness(t);
    const fifo = join(h.src, 'backend.tar.gz');
    execFileSync('mkfifo', [fifo]);
    for (const [uri, what] of [[fifo, 'a FIFO'], ['/dev/zero', 'a device'], [`file://${fifo}`, 'a FIFO']] as const) {
      await assert.rejects(h.install(uri), (err: unknown) => {
        assert.ok(err instanceof HangarError, String(err));
        assert.equal(err.code, 'bad-input');
        assert.equal(err.message, `backend "demo": ${uri.replace('file://', '')} is ${what}, not an archive or a folder`);
        return true;
      });
      h.assertUntouched();
    }
  });

  it('a malformed URL, or a file:// URL that names no file on this machine, is bad input said in words', async (t) => {
    const h = await harness(t);
    const malformed = [
      ['http://[::1/backend.tar.gz', 'is not a valid URL'],
      ['https://', 'is not a valid URL'],
      ['file://files.example/backend.tar', 'is not a file on this machine: file URL host must be "localhost" or empty on linux'],
      ['file:///srv/a%2fb.tar', 'is not a file on this machine: file URL path must not include encoded / characters'],
    ];
    for (const [uri, why] of malformed) {
      await assert.rejects(h.install(uri!), (err: unknown) => {
        assert.ok(err instanceof HangarError, String(err));
        assert.deepEqual([err.code, err.message], ['bad-input', `backend "demo": "${uri}" ${why}`]);
        return true;
      });
      h.assertUntouched();
    }
  });
});
