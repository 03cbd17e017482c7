// The smoke start through the real agent and CLI: an upgrade to a build that cannot start is rolled back with its
// reason, --no-smoke-start skips the check for one job, the setting for all; `hangar info` and the agent's start say
// how a stop finds all of a backend's processes on this machine.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync, readdirSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { hangar, json, startAgent, type Agent } from './test-agent.ts';

/** The port of the backend a job started under `root` (its run.sh still waits), read from its command line. */
async function startingPort(root: string): Promise<number> {
  for (const end = Date.now() + 20_000; Date.now() < end; ) {
    for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
      let command = '';
      try {
        command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      } catch {
        continue;
      }
      const port = command.includes(root) ? /run\.sh --addr 127\.0\.0\.1:(\d+)/.exec(command)?.[1] : undefined;
      if (port) return Number(port);
    }
    await delay(20);
  }
  throw new Error('no backend started under the test folder within 20 s');
}

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

  test('a new build that waits before it listens, its port taken meanwhile by another program: the job says the move', async () => {
    // The build sleeps a moment before it serves (a setup step); the test takes its port while it sleeps.
    const src = await echoSource(root, '5.0.0');
    await rename(join(src, 'run.sh'), join(src, 'real-run.sh'));
    await writeFile(join(src, 'run.sh'), '#!/bin/sh\nsleep 0.8\nexec "$(dirname "$0")/real-run.sh" "$@"\n', { mode: 0o755 });
    await writeGallery(gallery, [{ name: 'echo', uri: src, version: '5.0.0' }]);
    const upgrading = hangar(agent, 'upgrade', 'echo');
    const port = await startingPort(root);
    const interloper = createServer((connection) => connection.destroy());
    interloper.listen(port, '127.0.0.1');
    await once(interloper, 'listening');
    try {
      const upgraded = await upgrading;
      assert.equal(upgraded.code, 0, upgraded.stderr);
      assert.match(upgraded.stderr, new RegExp(`^hangar: note: port ${port} was taken while backend echo started: it died [0-9.]+s into its start; starting it again on another port \\(try 2 of 3\\)`, 'm'));
    } finally {
      interloper.close();
    }
  });

  test('info and the agent\'s start say how a stop finds all of a backend\'s processes', async () => {
    const info = await hangar(agent, 'info');
    assert.equal(info.code, 0, info.stderr);
    const line = /^processes +(.+)$/m.exec(info.stdout)?.[1];
    // Linux: a cgroup, or the session path; the POSIX layer: the process group and the leader's mark.
    assert.match(line ?? '', /^(each backend process runs in a cgroup of its own under \S+\/hangar: |no cgroup for backends \(|no cgroups here: each backend leads a process group of its own)/);
    assert.ok(agentErr.includes(`hangar: processes: ${line}\n`), agentErr);
    assert.equal((await json<{ processTracking: string }>(agent, 'info')).processTracking, line);
  });
});
