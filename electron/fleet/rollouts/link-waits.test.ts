// A call a rollout's step waits on when the link to the broker comes back is asked again at once: its answer, if the
// node sent one during the outage, is lost, and its own timeout may be a minute away.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import { untilReached, type Patience } from './link-waits.ts';

test('a call still waiting when the link comes back is abandoned and asked again; one that answered is not', { timeout: 10_000 }, async () => {
  const link = new EventEmitter<{ back: [] }>();
  const patience: Patience = {
    untilMs: Date.now() + 60_000,
    everyMs: 1,
    stop: () => false,
    onRelinked: (back) => {
      link.once('back', back);
      return () => void link.off('back', back);
    },
  };
  let asked = 0;
  // The first call's answer was lost in the outage: it never settles.
  const answered = untilReached(() => (++asked === 1 ? new Promise<string>(() => undefined) : Promise.resolve(`answer ${asked}`)), patience);
  await new Promise(setImmediate);
  assert.equal(asked, 1);
  link.emit('back');
  assert.equal(await answered, 'answer 2');
  assert.equal(link.listenerCount('back'), 0, 'no call listens once it has its answer');
  assert.equal(await untilReached(async () => 'at once', patience), 'at once');
  assert.equal(link.listenerCount('back'), 0);
});
