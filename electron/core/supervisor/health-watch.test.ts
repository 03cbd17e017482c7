// The health watch on its own, against a real echo backend: an adopted row is ready once it answers, a stopped process
// turns unresponsive and back, and whether the model is loaded follows the backend's Status.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ProcessView } from '../../../shared/index.ts';
import { currentPlatform } from '../platform/index.ts';
import { HealthWatch } from './health-watch.ts';
import { ProcessRecords, type Proc } from './process-records.ts';
import { rowUsage } from './row-usage.ts';
import { ProcessTable } from './table.ts';
import { echoRow, makeHome, startEchoServer, writeEcho, type Home } from './test-helpers.ts';

describe('health watch', () => {
  let home: Home;
  let echo: Awaited<ReturnType<typeof startEchoServer>>;
  let proc: Proc;
  let watch: HealthWatch;
  const events = new EventEmitter();
  const seen: ProcessView[] = [];
  events.on('process', (view: ProcessView) => seen.push(view));

  /** Rounds until `done` holds: a backend just woken may miss the first call of its new connection. */
  async function roundsUntil(done: () => boolean): Promise<void> {
    for (let i = 0; i < 20 && !done(); i++) await watch.round();
  }

  before(async () => {
    home = makeHome();
    const dir = join(home.backendsDir, 'echo');
    await writeEcho(dir, '1.0.0');
    echo = await startEchoServer(dir);
    proc = await echoRow(echo, 'watched', dir);
    const records = new ProcessRecords(new ProcessTable(home.stateDir), rowUsage(currentPlatform()), events);
    records.put(proc);
    watch = new HealthWatch(records, { endedUnseen: async () => [] }, 300);
  });
  after(async () => {
    proc.client.close();
    await echo.stop();
    home.cleanup();
  });

  test('an adopted row (starting, nothing to wait on) is ready once it answers Health', async () => {
    assert.equal(proc.state, 'starting');
    await watch.round();
    assert.equal(proc.state, 'ready');
    assert.equal(seen.at(-1)?.state, 'ready');
  });

  test('a stopped backend turns unresponsive with the reason, and ready again once it answers', async () => {
    process.kill(echo.child.pid!, 'SIGSTOP');
    try {
      await watch.round();
      assert.deepEqual([proc.state, proc.error], ['unresponsive', 'no Health answer within 300 ms']);
      const events = seen.length;
      await watch.round();
      assert.equal(seen.length, events, 'no event while nothing changes');
    } finally {
      process.kill(echo.child.pid!, 'SIGCONT');
    }
    await roundsUntil(() => proc.state === 'ready');
    assert.deepEqual([proc.state, proc.error], ['ready', null]);
  });

  test('loaded is the backend\'s word: a Free behind Hangar\'s back clears it and says why', async () => {
    const result = await proc.client.loadModel({ model: 'watched', modelFile: join(home.modelsDir, 'watched'), modelPath: home.modelsDir }, 5000);
    assert.equal(result.success, true);
    await watch.round();
    assert.equal(proc.loaded, true);
    await proc.client.free(2000);
    await watch.round();
    assert.deepEqual([proc.loaded, proc.error], [false, 'the backend reports no model loaded (Status UNINITIALIZED)']);
  });

  test('a row that is stopping or has ended is not asked', async () => {
    for (const state of ['stopping', 'crashed'] as const) {
      proc.state = state;
      process.kill(echo.child.pid!, 'SIGSTOP');
      try {
        await watch.round();
      } finally {
        process.kill(echo.child.pid!, 'SIGCONT');
      }
      assert.equal(proc.state, state);
    }
  });
});
