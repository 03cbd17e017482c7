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

  it('lists the jobs of the last run after a restart, bounded, and one that was running as interrupted, not running', async (t) => {
    const stateDir = await tempRoot(t);
    const history = new JobHistory(stateDir);
    const before = new JobRunner('local', () => undefined, history);
    for (let i = 0; i < 205; i++) await before.wait(before.start('delete', `b${i}`, async () => undefined).id);
    const installed = before.start('install', 'echo', async () => undefined);
    await before.wait(installed.id);
    const hung = before.start('upgrade', 'whisper', async (ctx) => {
      ctx.phase('fetching');
      await new Promise(() => undefined);
    });
    await history.flush();

    const published: string[] = [];
    const kept = new JobHistory(stateDir);
    const after = new JobRunner('local', (job) => published.push(job.id), kept);
    await after.restore();
    const listed = after.list();
    assert.equal(listed.length, 200, 'the newest 200 are listed');
    assert.deepEqual(listed.slice(-2).map((j) => [j.backend, j.state, j.phase]), [['echo', 'done', 'done'], ['whisper', 'failed', 'interrupted']]);
    const ended = listed.at(-1)!;
    assert.equal(ended.id, hung.id);
    assert.equal(ended.error, 'interrupted: the agent stopped while the upgrade of whisper was fetching; it did not finish');
    assert.ok(ended.finishedAt !== null);
    assert.deepEqual(await after.wait(hung.id), ended);
    assert.deepEqual(published, [], 'what a previous run did is listed, not news');
    await kept.flush();

    const third = new JobRunner('local', () => undefined, new JobHistory(stateDir));
    await third.restore();
    assert.deepEqual(third.list().at(-1), ended, 'kept as interrupted, with the moment the host found it so');
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
