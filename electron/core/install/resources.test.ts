import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { chmod, chown, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { installBackend } from './install.ts';
import { builtinSources } from './builtin-sources.ts';
import { BackendStore } from './store.ts';
import { backendEntries, makeTarGz, snapshot, tempRoot, writeArchive } from './testdata/fixtures.ts';
import { TS_NODE } from '../testing/ts-node.ts';

const NOBODY = 65534;
const child = fileURLToPath(new URL('./testdata/install-child.ts', import.meta.url));

async function installDemo(backends: string, uri: string): Promise<void> {
  await installBackend(new BackendStore(backends), { name: 'demo', uris: [uri], factories: builtinSources, sourceOptions: { baseDir: null, baseUrl: null } });
}

function assertOnly(dir: string, names: string[]): void {
  assert.deepEqual(readdirSync(dir).sort(), names);
}

/** On a tiny filesystem: a good install fits, a bigger one runs out of space mid-extraction. */
async function fillUp(mnt: string, outside: string): Promise<void> {
  const backends = join(mnt, 'backends');
  await mkdir(join(mnt, 'sentinel'));
  await installDemo(backends, await writeArchive(mnt, 'good.tgz', await makeTarGz(backendEntries('v1'))));
  const before = snapshot(join(backends, 'demo'));
  const big = await writeArchive(outside, 'big.tgz', await makeTarGz(backendEntries('v2', [{ name: 'blob', content: randomBytes(4 * 1024 * 1024) }])));
  await assert.rejects(installDemo(backends, big), /^HangarError: backend "demo": ENOSPC: no space left on device/);
  assert.deepEqual(snapshot(join(backends, 'demo')), before);
  assertOnly(backends, ['.hangar', 'demo']);
  assertOnly(join(backends, '.hangar', 'staging'), []);
  assertOnly(mnt, ['backends', 'good.tgz', 'sentinel']);
  assertOnly(join(mnt, 'sentinel'), []);
}

describe('resource and permission failures mid-install', () => {
  it('disk full (ENOSPC on a 2 MiB tmpfs): live untouched, staging cleaned, error names backend and cause', async (t) => {
    const root = await tempRoot(t);
    const mnt = join(root, 'mnt');
    await mkdir(mnt);
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mnt], { stdio: 'pipe' });
    } catch (err) {
      console.error(`\n*** SKIPPING the ENOSPC test: cannot mount a tmpfs here (${String(err).split('\n')[0]}) ***\n`);
      t.skip('mount -t tmpfs failed');
      return;
    }
    try {
      await fillUp(mnt, root);
    } finally {
      execFileSync('umount', [mnt]); // before tempRoot's cleanup removes the mount point
    }
  });

  it('permission denied reading the source (as an unprivileged user): live untouched, staging cleaned', async (t) => {
    const root = await tempRoot(t);
    await chmod(root, 0o755);
    const backends = join(root, 'backends');
    await installDemo(backends, await writeArchive(join(root, 'src'), 'good.tgz', await makeTarGz(backendEntries('v1'))));
    execFileSync('chown', ['-R', `${NOBODY}:${NOBODY}`, backends]);
    const before = snapshot(join(backends, 'demo'));
    const tree = join(root, 'src', 'tree');
    await mkdir(tree, { recursive: true });
    await writeFile(join(tree, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    await writeFile(join(tree, 'weights.bin'), 'secret', { mode: 0o600 });
    await chown(join(tree, 'weights.bin'), 0, 0);
    const run = spawnSync(process.execPath, [...TS_NODE, child, backends, tree], { uid: NOBODY, gid: NOBODY, encoding: 'utf8', cwd: join(fileURLToPath(import.meta.url), '../../../..') });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout.trim(), /^backend "demo": EACCES: permission denied, copyfile '.*weights\.bin'/);
    assert.deepEqual(snapshot(join(backends, 'demo')), before);
    assertOnly(backends, ['.hangar', 'demo']);
    assertOnly(join(backends, '.hangar', 'staging'), []);
    assertOnly(root, ['backends', 'src']);
  });
});
