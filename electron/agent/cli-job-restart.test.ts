// The jobs a real agent ran, after it restarts on its home: `hangar jobs` lists them again, and a job that was
// fetching when the agent was killed is listed as interrupted, not running, with where it stopped.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { JobView } from '../../shared/types.ts';
import { serveSlowly, type SlowServer } from '../../e2e/fixtures/slow-server.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { hangar, json, startAgent, until, type Agent } from './test-agent.ts';

const run = promisify(execFile);

describe('jobs across an agent restart', () => {
  let root: string;
  let gallery: string;
  let agent: Agent;
  let slow: SlowServer;

  before(async () => {
    root = await tempDir('cli-job-restart');
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    agent = await startAgent(join(root, 'home'), gallery);
    // 1.1.0 is 2 MiB of random bytes served at 128 KiB/s: its upgrade is still fetching when the agent is killed.
    const source = await echoSource(root, '1.1.0');
    await writeFile(join(source, 'weights.bin'), randomBytes(2 << 20));
    await run('tar', ['-czf', join(root, 'echo-1.1.0.tar.gz'), '-C', source, '.']);
    slow = await serveSlowly(join(root, 'echo-1.1.0.tar.gz'), 128 * 1024);
  });

  after(async () => {
    agent?.child.kill('SIGKILL');
    await slow?.close();
    await rm(root, { recursive: true, force: true });
  });

  test('a restarted agent lists the jobs it ran, and the one it died in as interrupted', async () => {
    assert.equal((await hangar(agent, 'install', 'echo')).code, 0);
    await writeGallery(gallery, [{ name: 'echo', uri: `${slow.url}/echo-1.1.0.tar.gz`, version: '1.1.0' }]);
    await until('the gallery offers 1.1.0', async () => ((await json<{ upgradable: boolean }[]>(agent, 'ls'))[0]!.upgradable ? true : undefined), 10_000);
    const following = spawn(process.execPath, ['dist/agent/cli.js', '--node', agent.url, '--home', agent.home, 'upgrade', 'echo'], { stdio: 'ignore' });
    const upgrade = await until('the fetch under way', async () => (await json<JobView[]>(agent, 'jobs')).find((j) => j.kind === 'upgrade' && j.phase === 'fetching' && j.bytes > 0), 15_000);
    agent.child.kill('SIGKILL');
    await Promise.all([once(agent.child, 'exit'), once(following, 'exit')]);

    agent = await startAgent(agent.home, gallery);
    const jobs = await json<JobView[]>(agent, 'jobs');
    assert.deepEqual(jobs.map((j) => [j.kind, j.backend, j.state, j.phase]), [['install', 'echo', 'done', 'done'], ['upgrade', 'echo', 'failed', 'interrupted']]);
    assert.equal(jobs[1]!.id, upgrade.id);
    const table = (await hangar(agent, 'jobs')).stdout;
    assert.match(table, new RegExp(`^${upgrade.id} +upgrade echo +failed +interrupted +\\S+ +interrupted: the agent stopped while the upgrade of echo was fetching; it did not finish$`, 'm'));
    assert.match(table, /^\S+ +install echo +done +done /m);
  });
});
