// A LocalAI start that takes long (a first start fetches what it needs before it listens), as a user stops it: a stop
// or a restart asked for meanwhile takes effect at once rather than after the wait for /readyz, and Ctrl-C on the
// start stops LocalAI before it is ready; a second Ctrl-C leaves it starting and says how to follow and stop it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startCli, until } from '../../agent/test-agent.ts';
import { alive, localAiStand, type LocalAiStand } from '../testing/localai-stand.ts';

/** Far longer than any test's timeout: a start that is not cancelled fails the test. */
const READY_AFTER_MS = 600_000;
/** Its graceful shutdown, long enough for a second Ctrl-C to come while the first one's stop is under way. */
const STOP_TAKES_MS = 3_000;

describe('a LocalAI start that takes long', () => {
  let stand: LocalAiStand;
  /**
   * `localai start` in the background, once LocalAI's process runs and waits to listen: the command and the pid. Once
   * it said its first line: LocalAI handles SIGINT from its first moment (pkg/signals sets it up in an init()), the
   * stand-in only once Node has loaded it, and a stop before then would kill it outright.
   */
  const starting = async () => {
    const start = startCli(stand.agent, 'localai', 'start');
    const view = await until('LocalAI starting', async () => {
      const status = await stand.status();
      if (status.state !== 'starting' || status.pid === null) return undefined;
      const logs = (await stand.ok('localai', 'logs')).stdout;
      return logs.slice(logs.lastIndexOf(`(pid ${status.pid})`)).includes('Starting LocalAI') ? status : undefined;
    }, 20_000);
    return { start, pid: view.pid! };
  };

  before(async () => {
    stand = await localAiStand('localai-slow-start', '24720-24739');
    await stand.releases.publish({ version: 'v3.2.0', readyAfterMs: READY_AFTER_MS, stopTakesMs: STOP_TAKES_MS });
    await stand.ok('localai', 'install');
  });

  after(() => stand?.close());

  test('a stop asked for during the start stops LocalAI at once; the start says it was cancelled', { timeout: 90_000 }, async () => {
    const { start, pid } = await starting();
    const stop = await stand.ok('localai', 'stop');
    assert.match(stop.stdout, /^LocalAI: stopped, v3\.2\.0\n/);
    assert.equal(alive(pid), false, 'the starting process is gone');
    const ended = await start.exited;
    assert.equal(ended.code, 1);
    assert.equal(start.stderr(), "hangar: LocalAI's start was cancelled before it was ready: hangar localai stop was asked for\n");
    const status = await stand.status();
    assert.deepEqual([status.state, status.pid, status.failedStart], ['stopped', null, null], 'a cancelled start is not a failed one');
  });

  test('Ctrl-C on the start stops LocalAI before it is ready (130); a second one leaves it starting, saying how to stop it', async () => {
    const first = await starting();
    first.start.interrupt();
    const { code, signal } = await first.start.exited;
    assert.equal(code, 130, `ended by ${signal ?? `exit status ${code}`}, having said: ${JSON.stringify(first.start.stderr())}`);
    assert.equal(first.start.stderr(), "hangar: cancelling LocalAI's start… (Ctrl-C again leaves it running)\nhangar: stopped LocalAI before it was ready\n");
    assert.equal(alive(first.pid), false);
    assert.equal((await stand.status()).state, 'stopped');

    const second = await starting();
    second.start.interrupt();
    await until('Ctrl-C answered', () => (second.start.stderr().includes('cancelling') ? true : undefined), 10_000);
    second.start.interrupt();
    const ended = await second.start.exited;
    assert.equal(ended.code, 130, `ended by ${ended.signal ?? `exit status ${ended.code}`}, having said: ${JSON.stringify(second.start.stderr())}`);
    assert.match(second.start.stderr(), /\nhangar: left LocalAI's start running: `hangar localai status` follows it, `hangar localai stop` stops it\n$/);
    // The first Ctrl-C's stop was already sent: LocalAI goes, as asked.
    await until('the start stopped', async () => ((await stand.status()).state === 'stopped' ? true : undefined), 20_000, async () => {
      const { state, pid, operation, lastExit } = await stand.status();
      return `LocalAI ${state}, pid ${pid}, operation ${JSON.stringify(operation)}, last exit ${JSON.stringify(lastExit)}`;
    });
    assert.equal(alive(second.pid), false);
  });
});
