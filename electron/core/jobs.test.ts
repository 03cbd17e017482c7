import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobHistory } from './job-history.ts';
import { JobRunner } from './jobs.ts';
import { tempRoot } from './install/testdata/fixtures.ts';

describe('JobRunner', () => {
  it('answers for a job pruned from memory, and after a restart, with how it ended', async (t) => {
    const stateDir = await tempRoot(t);
    const history = new JobHistory(stateDir);
    const runner = new JobRunner('local', () => undefined, history);
    const first = runner.start('upgrade', 'echo', async () => 'up to date');
    const failed = runner.start('install', 'whisper', async () => {
      throw new Error('whisper: sha256 mismatch');
    });
    await runner.wait(failed.id);
    for (let i = 0; i < 210; i++) await runner.wait(runner.start('delete', `b${i}`, async () => undefined).id);
    assert.equal(runner.list().some((j) => j.id === first.id), false, 'pruned from memory');

    const pruned = await runner.wait(first.id);
    assert.deepEqual([pruned.state, pruned.phase, pruned.backend], ['done', 'up to date', 'echo']);
    await history.flush();

    const restarted = new JobRunner('local', () => undefined, new JobHistory(stateDir));
    const again = await restarted.wait(failed.id);
    assert.deepEqual([again.state, again.error], ['failed', 'whisper: sha256 mismatch']);
    assert.equal((await restarted.cancel(first.id)).state, 'done', 'cancelling a finished job only reports it');
    await assert.rejects(restarted.wait('no-such-id'), /no job no-such-id/);
  });

  it('shows the last byte count of a fetch with no known size before the next phase, however fast it went', async () => {
    const published: { phase: string; bytes: number }[] = [];
    const runner = new JobRunner('local', (job) => published.push({ phase: job.phase, bytes: job.bytes }));
    const job = runner.start('install', 'echo', async (ctx) => {
      ctx.phase('fetching');
      for (const bytes of [6, 4096, 958_464]) ctx.progress(bytes, null); // a folder copied file by file, in well under 100 ms
      ctx.phase('verifying');
    });
    await runner.wait(job.id);
    const fetching = published.filter((p) => p.phase === 'fetching');
    assert.equal(fetching.at(-1)?.bytes, 958_464, `the fetching phase ended on ${fetching.at(-1)?.bytes} B`);
  });
});
