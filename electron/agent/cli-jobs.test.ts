// Ctrl-C in the real `hangar` CLI while a job runs, against a real agent: the first cancels the job as the UI's
// Cancel does and says so; a second leaves it running and says how to follow it. `jobs`, `wait` and `cancel`.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { serveSlowly, type SlowServer } from '../../e2e/fixtures/slow-server.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { cliRunsAsProcesses, hangar, json, startAgent, startCli as start, until, type Agent } from './test-agent.ts';

cliRunsAsProcesses();

const run = promisify(execFile);

describe('Ctrl-C and the jobs of the CLI', () => {
  let root: string;
  let gallery: string;
  let agent: Agent;
  let slow: SlowServer;
  let pid: number;

  before(async () => {
    root = await tempDir('cli-jobs');
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    agent = await startAgent(join(root, 'home'), gallery);
    assert.equal((await hangar(agent, 'install', 'echo')).code, 0);
    ({ pid } = await json<{ pid: number }>(agent, 'load', 'echo', 'm1'));
    // 1.1.0 is a 2 MiB tarball (random bytes, so gzip cannot shrink it) served at 128 KiB/s: the upgrade spends 16 s fetching.
    const source = await echoSource(root, '1.1.0');
    await writeFile(join(source, 'weights.bin'), randomBytes(2 << 20));
    await run('tar', ['-czf', join(root, 'echo-1.1.0.tar.gz'), '-C', source, '.']);
    slow = await serveSlowly(join(root, 'echo-1.1.0.tar.gz'), 128 * 1024);
    await writeGallery(gallery, [{ name: 'echo', uri: `${slow.url}/echo-1.1.0.tar.gz`, version: '1.1.0' }]);
    await until('the gallery offers 1.1.0', async () => ((await json<{ upgradable: boolean }[]>(agent, 'ls'))[0]!.upgradable ? true : undefined), 10_000);
  });

  after(async () => {
    agent?.child.kill('SIGKILL');
    await slow?.close();
    await rm(root, { recursive: true, force: true });
  });

  test('Ctrl-C during an upgrade cancels it, says so, and leaves the live tree and its process as they were', async () => {
    const live = join(agent.home, 'backends', 'echo');
    const upgrade = start(agent, 'upgrade', 'echo');
    await until('the fetch under way', async () => (/upgrade echo: fetching [1-9]/.test(upgrade.stderr()) ? true : undefined), 15_000);
    upgrade.interrupt();
    const { code, stdout } = await upgrade.exited;
    assert.equal(code, 130, upgrade.stderr());
    assert.equal(stdout, '');
    assert.match(upgrade.stderr(), /^hangar: cancelling the upgrade of echo… \(Ctrl-C again leaves it running\)$/m);
    assert.match(upgrade.stderr(), /^hangar: cancelled the upgrade of echo; the live tree is untouched\n$/m);

    assert.equal((await readFile(join(live, 'VERSION'), 'utf8')).trim(), '1.0.0');
    const [echo] = await json<{ version: string; upgradable: boolean }[]>(agent, 'ls');
    assert.deepEqual([echo!.version, echo!.upgradable], ['1.0.0', true]);
    const [m1] = await json<{ pid: number; cwd: string; state: string }[]>(agent, 'ps');
    assert.deepEqual([m1!.pid, m1!.cwd, m1!.state], [pid, 'ok', 'ready'], 'm1 was not restarted');
    assert.deepEqual(await readdir(join(agent.home, 'backends', '.hangar', 'staging')).catch(() => []), [], 'nothing staged is left');

    const jobs = await hangar(agent, 'jobs');
    assert.match(jobs.stdout, /^ID +JOB +STATE +PHASE +STARTED +NOTE$/m);
    assert.match(jobs.stdout, /^\S+ +upgrade echo +cancelled +cancelled +\S+ +upgrade of echo was cancelled$/m);
  });

  test('hangar cancel takes the first characters of a running job id, and hangar wait follows a job to its end', async () => {
    const upgrade = start(agent, 'upgrade', 'echo');
    await until('the fetch under way', async () => (/upgrade echo: fetching [1-9]/.test(upgrade.stderr()) ? true : undefined), 15_000);
    const running = (await json<{ id: string; state: string }[]>(agent, 'jobs')).find((j) => j.state === 'running')!;

    const waiting = start(agent, 'wait', running.id);
    await until('wait shows the progress', async () => (/upgrade echo: fetching/.test(waiting.stderr()) ? true : undefined), 5000);
    const cancel = await hangar(agent, 'cancel', running.id.slice(0, 8));
    assert.equal(cancel.code, 0, cancel.stderr);
    assert.equal(cancel.stdout, 'cancelled the upgrade of echo; the live tree is untouched\n');
    const waited = await waiting.exited;
    assert.equal(waited.code, 1, 'wait fails with the job it followed');
    assert.match(waiting.stderr(), /^hangar: upgrade of echo was cancelled$/m);
    assert.equal((await upgrade.exited).code, 1);

    const again = await hangar(agent, 'cancel', running.id);
    assert.equal(again.code, 4);
    assert.equal(again.stderr, 'hangar: the upgrade of echo already ended: cancelled\n');
    const unknown = await hangar(agent, 'cancel', 'zzzz');
    assert.equal(unknown.code, 3);
    assert.match(unknown.stderr, /^hangar: no job zzzz\n$/);
  });

  test('a second Ctrl-C, while the job is past cancelling, leaves it running and names the commands that follow and cancel it', async () => {
    // 1.2.0 takes 3 s to start: the upgrade spends them respawning m1, which a cancel cannot stop.
    const source = await echoSource(root, '1.2.0');
    const runSh = join(source, 'run.sh');
    await writeFile(runSh, (await readFile(runSh, 'utf8')).replace(/^exec /m, 'sleep 3\nexec '));
    await writeGallery(gallery, [{ name: 'echo', uri: source, version: '1.2.0' }]);
    await until('the gallery offers 1.2.0', async () => ((await json<{ upgradable: boolean }[]>(agent, 'ls'))[0]!.upgradable ? true : undefined), 10_000);

    const upgrade = start(agent, 'upgrade', 'echo');
    await until('the respawn under way', async () => (/upgrade echo: respawning/.test(upgrade.stderr()) ? true : undefined), 15_000);
    upgrade.interrupt();
    await until('the cancel asked for', async () => (upgrade.stderr().includes('cancelling the upgrade') ? true : undefined), 5000);
    upgrade.interrupt();
    const { code } = await upgrade.exited;
    assert.equal(code, 130, upgrade.stderr());
    const id = /^hangar: left the upgrade of echo running \(job (\S+)\): `hangar wait \1` follows it, `hangar cancel \1` cancels it$/m.exec(upgrade.stderr())?.[1];
    assert.ok(id, upgrade.stderr());

    const waited = await hangar(agent, 'wait', id);
    assert.equal(waited.code, 0, waited.stderr);
    assert.match(waited.stdout, /^upgraded echo to \S+\n$/);
    const [m1] = await json<{ pid: number; state: string }[]>(agent, 'ps');
    assert.notEqual(m1!.pid, pid);
    assert.equal(m1!.state, 'ready');
    assert.equal((await json<{ version: string }[]>(agent, 'ls'))[0]!.version, '1.2.0');
  });
});
