// The smoke start through the real agent and CLI: an upgrade to a build that cannot start is rolled back with its
// reason, --no-smoke-start skips the check for one job, the setting for all; `hangar info` and the agent's start say
// how a stop finds all of a backend's processes on this machine.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { hangar, json, startAgent, type Agent } from './test-agent.ts';

describe('the smoke start, from the CLI', () => {
  let root: string;
  let gallery: string;
  let agent: Agent;
  let agentErr = '';

  /** echo `version` in the gallery; `broken`: its run.sh exits 7 at once. */
  async function publish(version: string, broken = false): Promise<void> {
    const src = await echoSource(root, version);
    if (broken) await writeFile(join(src, 'run.sh'), '#!/bin/sh\necho "cannot start: missing libfoo.so" >&2\nexit 7\n', { mode: 0o755 });
    await writeGallery(gallery, [{ name: 'echo', uri: src, version }]);
  }

  before(async () => {
    root = await tempDir('smoke-start');
    gallery = join(root, 'index.yaml');
    await publish('1.0.0');
    agent = await startAgent(join(root, 'home'), gallery);
    agent.child.stderr!.on('data', (chunk: Buffer) => (agentErr += chunk.toString()));
  });
  after(async () => {
    agent?.child.kill('SIGTERM');
    if (agent) await once(agent.child, 'exit');
    await rm(root, { recursive: true, force: true });
  });

  test('an install is smoke-started; an upgrade to a build that exits is rolled back with its reason; --no-smoke-start skips it', async () => {
    const install = await hangar(agent, 'install', 'echo');
    assert.equal(install.code, 0, install.stderr);
    assert.match(install.stderr, /^install echo: smoke start$/m);
    assert.deepEqual(await json(agent, 'ps'), [], 'the smoke start left nothing running');

    await publish('2.0.0', true);
    const refused = await hangar(agent, 'upgrade', 'echo');
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^hangar: upgrade echo to 2\.0\.0 failed: the new build exited with code 7 before it answered Health: cannot start: missing libfoo\.so; rolled back to 1\.0\.0$/m);
    assert.equal((await json<{ version: string }[]>(agent, 'ls'))[0]?.version, '1.0.0');

    const unchecked = await hangar(agent, 'upgrade', 'echo', '--no-smoke-start');
    assert.equal(unchecked.code, 0, unchecked.stderr);
    assert.doesNotMatch(unchecked.stderr, /smoke start/);
    assert.equal((await json<{ version: string }[]>(agent, 'ls'))[0]?.version, '2.0.0');
  });

  test('the setting turns it off for every job, and is shown with the others', async () => {
    assert.match((await hangar(agent, 'settings')).stdout, /^smoke-start +on/m);
    assert.equal((await hangar(agent, 'settings', 'smoke-start', 'off')).code, 0);
    assert.match((await hangar(agent, 'settings')).stdout, /^smoke-start +off/m);
    await publish('3.0.0', true);
    assert.equal((await hangar(agent, 'upgrade', 'echo')).code, 0, 'no smoke start: the broken build goes live');
    assert.equal((await hangar(agent, 'settings', 'smoke-start', 'on')).code, 0);
  });

  test('info and the agent\'s start say how a stop finds all of a backend\'s processes', async () => {
    const info = await hangar(agent, 'info');
    assert.equal(info.code, 0, info.stderr);
    const line = /^processes +(.+)$/m.exec(info.stdout)?.[1];
    assert.match(line ?? '', /^(each backend process runs in a cgroup of its own under \S+\/hangar: |no cgroup for backends \()/);
    assert.ok(agentErr.includes(`hangar: processes: ${line}\n`), agentErr);
    assert.equal((await json<{ processTracking: string }>(agent, 'info')).processTracking, line);
  });
});
