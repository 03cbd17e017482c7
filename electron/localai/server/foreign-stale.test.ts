// A stale process that is not LocalAI's: its cwd, a deleted directory named like a backend's, lies outside this node's
// backends directory (another home's echo, say). It is counted as LocalAI's only when LocalAI listens through a
// container's port forwarder, where that directory is a volume seen under another path.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { currentPlatform } from '../../core/platform/index.ts';
import { tempDir } from '../../core/testing/fixtures.ts';
import { until } from '../../core/testing/until.ts';
import { findServerProcesses } from './processes.ts';

test("another home's stale backend is none of LocalAI's, unless LocalAI is in a container", async () => {
  const root = await tempDir('foreign-stale');
  const backendsDir = join(root, 'home', 'backends');
  const elsewhere = join(root, 'other-home', 'backends', 'echo');
  await Promise.all([mkdir(join(backendsDir, 'echo'), { recursive: true }), mkdir(elsewhere, { recursive: true })]);
  const stale = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', '--', '--addr', '127.0.0.1:9'], { cwd: elsewhere, stdio: 'ignore' });
  try {
    await rm(join(root, 'other-home'), { recursive: true });
    const platform = currentPlatform();
    const inContainer = await until('the stale process seen', async () => {
      const { found } = await findServerProcesses(platform, backendsDir, new Set(), null, true);
      return found.find((p) => p.pid === stale.pid);
    }, 15_000);
    assert.equal(inContainer.backend, 'echo');
    assert.match(inContainer.stale ?? '', /its directory was replaced and deleted: \/proc\/PID\/cwd is .*other-home\/backends\/echo \(deleted\)/);
    const here = await findServerProcesses(platform, backendsDir, new Set(), null);
    assert.equal(here.found.some((p) => p.pid === stale.pid), false);
  } finally {
    stale.kill('SIGKILL');
    await once(stale, 'exit');
    await rm(root, { recursive: true, force: true });
  }
});
