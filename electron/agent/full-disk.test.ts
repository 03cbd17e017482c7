// The agent on a home whose disk is full (a real tmpfs, filled to the last page): a setting that cannot be written
// is refused and changes nothing, every state file is written whole or not at all and its failure is said once, and
// the temporary files an interrupted write leaves are removed at the next start.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { tmpfsForTest } from '../core/testing/tmpfs.ts';
import { hangar, json, startAgent, until, type Agent } from './test-agent.ts';

const warnings = (stderr: string, file: string) => stderr.split('\n').filter((line) => line.startsWith('hangar: warning: ') && line.includes(file));

async function stopAgent(agent: Agent): Promise<number | null> {
  if (agent.child.exitCode !== null) return agent.child.exitCode;
  agent.child.kill('SIGTERM');
  const [code] = (await once(agent.child, 'exit')) as [number | null];
  return code;
}

describe('the agent on a full disk', () => {
  test('a reinstall with under 1 MiB free ends with the job, the live tree and the rollback target agreeing', async (t) => {
    // Stopped before the tmpfs goes: its hook is registered first, so it runs first.
    const running: { agent?: Agent } = {};
    t.after(async () => {
      if (running.agent) await stopAgent(running.agent);
    });
    const root = await tempDir('full-disk-swap');
    t.after(() => rm(root, { recursive: true, force: true }));
    const [old, next] = [join(root, 'old.yaml'), join(root, 'new.yaml')];
    await writeGallery(old, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    await writeGallery(next, [{ name: 'echo', uri: await echoSource(root, '2.0.0'), version: '2.0.0' }]);
    const mounted = await tmpfsForTest(t, '16m');
    if (!mounted) return;
    const { dir: home, disk } = mounted;
    const agent = (running.agent = await startAgent(home, null, ['--gallery', `old=${old}`, '--gallery', `new=${next}`]));
    assert.equal((await hangar(agent, 'install', 'echo')).code, 0);
    await json(agent, 'load', 'echo', 'm1');

    await disk.leave(936 * 1024);
    const reinstall = await hangar(agent, 'install', 'new@echo', '--force');
    const echo = async () => (await json<Array<{ name: string; version: string; previous: { version: string } | null }>>(agent, 'ls')).find((b) => b.name === 'echo')!;
    const after = await echo();
    if (reinstall.code === 0) {
      assert.deepEqual([after.version, after.previous?.version], ['2.0.0', '1.0.0'], 'done: the new build is live, the old one kept to roll back to');
    } else {
      assert.match(reinstall.stderr, /failed/);
      assert.equal(after.version, '1.0.0', `failed (${reinstall.stderr.trim()}): the old build is live`);
    }
    assert.equal((await json<Array<{ model: string; cwd: string }>>(agent, 'ps')).find((p) => p.model === 'm1')?.cwd, 'ok', 'm1 runs from the live tree');

    // With room again, nothing was lost: the next install keeps the rollback target, and a rollback reaches it.
    await disk.free();
    if (reinstall.code === 0) {
      assert.equal((await hangar(agent, 'rollback', 'echo')).code, 0);
      assert.equal((await echo()).version, '1.0.0');
    } else {
      assert.equal((await hangar(agent, 'install', 'new@echo', '--force')).code, 0);
      assert.deepEqual([(await echo()).version, (await echo()).previous?.version], ['2.0.0', '1.0.0']);
    }
  });

  test('a setting that cannot be written is refused and lost nothing; state files fail whole, said once; leftovers go at start', async (t) => {
    let agent: Agent | undefined;
    t.after(async () => {
      if (agent) await stopAgent(agent);
    });
    const root = await tempDir('full-disk');
    t.after(() => rm(root, { recursive: true, force: true }));
    const gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    const mounted = await tmpfsForTest(t, '8m');
    if (!mounted) return;
    const { dir: home, disk } = mounted;

    agent = await startAgent(home, gallery);
    let stderr = '';
    agent.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    assert.equal((await hangar(agent, 'install', 'echo')).code, 0);
    await json(agent, 'load', 'echo', 'm1');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.1.0'), version: '1.1.0' }]);
    await disk.fill();

    const refused = await hangar(agent, 'settings', 'auto-upgrade', 'on');
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /^hangar: the settings were not changed: cannot write \S+\/state\/settings\.json: no space left on device\n$/);
    assert.equal((await json<{ settings: { autoUpgrade: boolean } }>(agent, 'settings')).settings.autoUpgrade, false, 'shown as it is kept');

    // Each of these writes the process table or the job history, and none of them fits.
    for (const model of ['m2', 'm3']) {
      await hangar(agent, 'load', 'echo', model);
      await hangar(agent, 'stop', model);
    }
    for (let i = 0; i < 2; i++) assert.notEqual((await hangar(agent, 'upgrade', 'echo')).code, 0, 'an upgrade does not fit either');
    // The job history is written once the job has ended, after the command has its answer: its failed write is given
    // a moment to remove its temporary file, which must then be gone.
    const temporary = async () => (await readdir(join(home, 'state'))).some((name) => name.endsWith('.tmp'));
    await until('no temporary file is left', async () => ((await temporary()) ? undefined : true), 5_000);
    assert.equal((await json<unknown[]>(agent, 'ps')).length, 1, 'the agent serves on, its backend too');
    await disk.free();
    assert.equal((await hangar(agent, 'ps')).code, 0);
    assert.equal(warnings(stderr, 'processes.json').length, 1, stderr);
    assert.equal(warnings(stderr, 'jobs.json').length, 1, stderr);
    assert.match(warnings(stderr, 'jobs.json')[0]!, /^hangar: warning: cannot write \S+\/state\/jobs\.json: no space left on device/);

    assert.equal((await hangar(agent, 'settings', 'auto-upgrade', 'on')).code, 0, 'with room again, the same change is kept');
    assert.equal(await stopAgent(agent), 0);
    // What a host that died mid-write leaves: a temporary file named for its pid.
    const leftover = join(home, 'state', `settings.json.${spawnSync('true').pid}.7.tmp`);
    await writeFile(leftover, '');
    agent = await startAgent(home, gallery);
    let restartErr = '';
    agent.child.stderr!.on('data', (chunk: Buffer) => (restartErr += chunk.toString()));
    assert.equal((await json<{ settings: { autoUpgrade: boolean } }>(agent, 'settings')).settings.autoUpgrade, true);
    assert.equal(existsSync(leftover), false, 'the interrupted write left nothing once the agent started');
    // Its own writes make a temporary file for a moment each.
    await until('no temporary file is left', async () => ((await temporary()) ? undefined : true), 5_000);
    assert.match(restartErr, /hangar: recovered: removed a temporary file that interrupted writes left in \S+\/state\n/);
  });
});
