// What a user types, against a real agent: a rollout named by the first characters of its id, as a job is, and a
// mistyped backend name refused to the one who typed it, with no failed job for every viewer to be told of.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { JobView, RolloutView } from '../../shared/types.ts';
import { connect } from './connect.ts';
import { echoSource, tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { hangar, json, startAgent, until, type Agent } from './test-agent.ts';

describe('names and ids as typed', () => {
  let root: string;
  let gallery: string;
  let agent: Agent;

  before(async () => {
    root = await tempDir('cli-typed-names');
    gallery = join(root, 'index.yaml');
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.0.0'), version: '1.0.0' }]);
    agent = await startAgent(join(root, 'home'), gallery);
    assert.equal((await hangar(agent, 'install', 'echo')).code, 0);
  });

  after(async () => {
    agent?.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });

  test('resume and rollback take a rollout by the first characters of its id', async () => {
    await writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, '1.1.0'), version: '1.1.0' }]);
    await until('the gallery offers 1.1.0', async () => ((await json<{ upgradable: boolean }[]>(agent, 'ls'))[0]!.upgradable ? true : undefined), 10_000);
    assert.equal((await hangar(agent, 'upgrade', 'echo', '--on', 'all')).code, 0);
    const [rollout] = await json<RolloutView[]>(agent, 'rollouts');
    const prefix = rollout!.id.slice(0, 8);

    const resumed = await hangar(agent, 'resume', '--rollout', prefix);
    assert.equal(resumed.stderr, `hangar: rollout ${rollout!.id} is done: there is nothing to resume\n`);
    const rolledBack = await hangar(agent, 'rollback', '--rollout', prefix);
    assert.equal(rolledBack.code, 0, rolledBack.stderr);
    assert.match(rolledBack.stdout, new RegExp(`^rollout ${rollout!.id}: echo → 1\\.1\\.0 on every node, rolled-back`));
    const again = await hangar(agent, 'rollback', '--rollout', prefix);
    assert.deepEqual([again.code, again.stderr], [4, `hangar: rollout ${rollout!.id} was rolled back already, at ${(await json<RolloutView[]>(agent, 'rollouts'))[0]!.finishedAt}\n`]);
  });

  test('a mistyped backend name is one error to the one who typed it, not a failed job', async () => {
    const watcher = await connect({ node: agent.url, home: agent.home });
    const jobEvents: JobView[] = [];
    watcher.onEvent((e) => e.type === 'job' && jobEvents.push(e.job));
    try {
      for (const [args, said] of [
        [['install', 'ehco'], 'backend "ehco": not in any gallery'],
        [['upgrade', 'ehco'], 'backend "ehco": not in any gallery'],
        [['rollback', 'ehco'], 'backend ehco is not installed'],
        [['delete', 'ehco'], 'backend ehco is not installed'],
      ] as const) {
        const typed = await hangar(agent, ...args);
        assert.deepEqual([typed.code, typed.stderr], [3, `hangar: ${said}\n`], args.join(' '));
      }
      // An event sent after the last refusal, to know every earlier one has arrived.
      assert.equal((await hangar(agent, 'install', 'echo')).code, 0);
      await until('the install seen', async () => (jobEvents.some((j) => j.backend === 'echo' && j.finishedAt !== null) ? true : undefined), 5000);
      assert.deepEqual(jobEvents.filter((j) => j.backend === 'ehco'), []);
      assert.deepEqual((await json<JobView[]>(agent, 'jobs')).filter((j) => j.backend === 'ehco'), []);
    } finally {
      watcher.close();
    }
  });
});
