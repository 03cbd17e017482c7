import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { KeyedLock } from './locks.ts';

test('shared work runs side by side, a run alone, in the order they came; a failure blocks nothing', async () => {
  const lock = new KeyedLock();
  const log: string[] = [];
  let inside = 0;
  let most = 0;
  const step = (name: string, ms: number, fail = false) => async () => {
    log.push(`${name}+`);
    most = Math.max(most, ++inside);
    await delay(ms);
    inside--;
    log.push(`${name}-`);
    if (fail) throw new Error(`${name} failed`);
    return name;
  };
  const results = await Promise.allSettled([
    lock.shared('echo', step('load-a', 30)),
    lock.shared('echo', step('load-b', 30)),
    lock.run('echo', step('swap', 10, true)),
    lock.shared('echo', step('load-c', 10)),
    lock.run('echo', step('delete', 10)),
    lock.shared('other', step('elsewhere', 5)),
  ]);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
  const order = (name: string) => log.indexOf(name);
  assert.ok(order('load-b+') < order('load-a-'), 'two loads ran at once');
  assert.ok(order('swap+') > order('load-a-') && order('swap+') > order('load-b-'), 'the swap waited for both loads');
  assert.ok(order('load-c+') > order('swap-'), 'a load queued after the swap waited for it, though it failed');
  assert.ok(order('delete+') > order('load-c-'), 'the next swap waited for that load');
  assert.ok(order('elsewhere+') < order('load-a-'), 'another key never waits');
  assert.equal(most, 3, 'load-a, load-b and elsewhere at once, no more');
});
