// What a failed `hangar localai` command prints: one line saying why, and LocalAI's own last log lines only where a
// LocalAI process failed (a start, or the new build of a swap), never the history of earlier commands, nor Hangar's
// own lines about LocalAI as if LocalAI had written them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hangar } from '../../agent/test-agent.ts';
import { localAiStand, type LocalAiStand } from '../testing/localai-stand.ts';

/** The lines a failure printed as LocalAI's, if any. */
function logTail(stderr: string): string[] | null {
  const at = stderr.indexOf("LocalAI's last log lines:\n");
  if (at === -1) return null;
  return stderr.slice(at).split('\n').slice(1).filter((line) => line.startsWith('  ')).map((line) => line.slice(2));
}

describe('a failed localai command', () => {
  let stand: LocalAiStand;

  before(async () => {
    stand = await localAiStand('localai-lines', '24620-24639');
    await stand.releases.publish({ version: 'v3.0.0' }, 'wrong');
    await stand.releases.publish({ version: 'v3.1.0', failStart: 'stand-in: this build is broken (bad instruction)' });
  });

  after(async () => {
    await stand?.close();
  });

  test('bad input, a refused release or no such release prints one line, with no log lines', async () => {
    // Failures first, so that LocalAI's log holds Hangar's lines about them.
    for (const args of [['install', 'v3.0.0'], ['install', 'v3.0.0'], ['upgrade', '3.3'], ['install', 'v9.9.9'], ['rollback']]) {
      const failed = await hangar(stand.agent, 'localai', ...args);
      assert.notEqual(failed.code, 0, args.join(' '));
      assert.equal(logTail(failed.stderr), null, `${args.join(' ')} printed log lines:\n${failed.stderr}`);
      assert.match(failed.stderr, /^hangar: [^\n]+\n$/, `${args.join(' ')}: one line`);
    }
  });

  test("a failed start prints the failed build's own last lines, not Hangar's", async () => {
    await stand.ok('localai', 'install', 'v3.1.0');
    const failed = await hangar(stand.agent, 'localai', 'start');
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /hangar: LocalAI exited before it was ready \(exit code 1\)\n$/);
    const tail = logTail(failed.stderr);
    assert.ok(tail, `the failed start's lines are printed:\n${failed.stderr}`);
    assert.ok(tail.some((line) => /ERR stand-in: this build is broken \(bad instruction\)$/.test(line)), tail.join('\n'));
    assert.ok(tail.every((line) => !line.startsWith('hangar: ')), `only LocalAI's own lines:\n${tail.join('\n')}`);
    // The next failure that is no start's prints none of them again.
    const again = await hangar(stand.agent, 'localai', 'install', 'v3.0.0');
    assert.equal(logTail(again.stderr), null, again.stderr);
  });

  test('the failed start is the last start until one gets to ready', async () => {
    assert.match((await stand.status()).failedStart?.why ?? '', /exited before it was ready/);
    await stand.releases.publish({ version: 'v3.2.0' });
    // LocalAI stopped: the upgrade starts the new build once to prove it, then stops it again.
    await stand.ok('localai', 'upgrade', 'v3.2.0');
    const status = await stand.status();
    assert.deepEqual([status.state, status.version, status.failedStart], ['stopped', 'v3.2.0', null]);
  });
});
