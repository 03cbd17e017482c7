// The home lock with real sockets and a real second process: exclusive, named by the home's real path, released
// by the OS when its holder dies.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { HomeBusyError, lockAddress, lockHome } from './home-lock.ts';
import { tempDir } from './testing/fixtures.ts';
import { TS_NODE } from './testing/ts-node.ts';

describe('home lock', () => {
  let root: string;
  before(async () => {
    root = await tempDir('home-lock');
  });
  after(() => rm(root, { recursive: true, force: true }));

  test('a second lock on the same home names the holder and where it serves; release frees the home', async () => {
    const home = join(root, 'a');
    const lock = await lockHome(home);
    await assert.rejects(lockHome(home), (error: unknown) => {
      assert.ok(error instanceof HomeBusyError);
      assert.deepEqual(error.holder, { pid: process.pid, url: null });
      assert.equal(error.message, `hangar (pid ${process.pid}) already serves this home`);
      return true;
    });
    lock.serving('http://127.0.0.1:1234');
    await assert.rejects(lockHome(home), { message: `hangar (pid ${process.pid}) already serves this home at http://127.0.0.1:1234` });
    await lock.release();
    await (await lockHome(home)).release();
  });

  test('every spelling of a home is one lock: symlinks, "..", a home not created yet', async () => {
    const real = join(root, 'real');
    await mkdir(real);
    await symlink(real, join(root, 'link'));
    assert.equal(lockAddress(join(root, 'link')), lockAddress(real));
    assert.equal(lockAddress(join(root, 'link', '..', 'real') + '/'), lockAddress(real));
    assert.equal(lockAddress(join(root, 'link', 'not-yet')), lockAddress(join(real, 'not-yet')));
    assert.notEqual(lockAddress(join(root, 'other')), lockAddress(real));
  });

  test('the lock of a host killed with SIGKILL is free at once', async () => {
    const home = join(root, 'killed');
    const holder = spawn(process.execPath, [...TS_NODE, '-e', `
      const { lockHome } = await import(${JSON.stringify(new URL('./home-lock.ts', import.meta.url).href)});
      const lock = await lockHome(${JSON.stringify(home)});
      lock.serving('http://holder');
      console.log('locked');
      setInterval(() => {}, 1000);
    `], { stdio: ['ignore', 'pipe', 'inherit'] });
    await once(createInterface({ input: holder.stdout! }), 'line');
    await assert.rejects(lockHome(home), { message: `hangar (pid ${holder.pid}) already serves this home at http://holder` });
    holder.kill('SIGKILL');
    await once(holder, 'exit');
    await (await lockHome(home)).release();
  });
});
