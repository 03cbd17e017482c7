// The restart rules on a clock the test turns by hand: backoff, the crash-loop window, policies, cancellation.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RestartScheduler, type RestartClock, type RestartRules } from './restart-policy.ts';

/** A clock whose time moves only when the test says, firing what falls due in order. */
class ManualClock implements RestartClock {
  private time = 0;
  private timers: Array<{ at: number; fire: () => void; live: boolean }> = [];

  now(): number {
    return this.time;
  }

  schedule(fire: () => void, ms: number): { cancel(): void } {
    const timer = { at: this.time + ms, fire, live: true };
    this.timers.push(timer);
    return { cancel: () => void (timer.live = false) };
  }

  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.live && t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.time = due.at;
      due.live = false;
      due.fire();
    }
    this.time = until;
  }

  get pending(): number {
    return this.timers.filter((t) => t.live).length;
  }
}

const rules: RestartRules = { baseMs: 1000, maxMs: 4000, loopLimit: 5, windowMs: 60_000 };

function setUp(given: Partial<RestartRules> = {}) {
  const clock = new ManualClock();
  const scheduler = new RestartScheduler({ ...rules, ...given }, clock);
  const ends: number[] = [];
  let restarts = 0;
  const crash = () => scheduler.afterEnd('m', 'on-failure', true, ends, () => restarts++);
  return { clock, scheduler, ends, crash, restarted: () => restarts };
}

describe('restart scheduler', () => {
  test('each crash within the window doubles the backoff from baseMs, up to maxMs, and the restart fires when it has passed', () => {
    const { clock, crash, restarted } = setUp();
    const backoffs: number[] = [];
    for (let i = 0; i < 4; i++) {
      const verdict = crash();
      assert.ok(verdict && 'restartInMs' in verdict);
      backoffs.push(verdict.restartInMs);
      clock.advance(verdict.restartInMs - 1);
      assert.equal(restarted(), i, 'not before its backoff');
      clock.advance(1);
      assert.equal(restarted(), i + 1);
    }
    assert.deepEqual(backoffs, [1000, 2000, 4000, 4000]);
  });

  test('loopLimit ends within the window leave the model crash-looping, with no restart scheduled', () => {
    const { clock, scheduler, crash, restarted } = setUp({ loopLimit: 3 });
    crash();
    clock.advance(1000);
    crash();
    clock.advance(2000);
    assert.deepEqual(crash(), { stay: 'loop', ends: 3 });
    assert.equal(clock.pending, 0);
    clock.advance(60_000);
    assert.equal(restarted(), 2);
    assert.equal(scheduler.closed, false);
  });

  test('ends older than the window are forgotten: the backoff starts over and the loop count too', () => {
    const { clock, ends, crash } = setUp({ windowMs: 10_000, loopLimit: 3 });
    crash();
    clock.advance(5000);
    assert.deepEqual(crash(), { restartInMs: 2000 });
    clock.advance(20_000);
    assert.deepEqual(crash(), { restartInMs: 1000 });
    assert.deepEqual(ends, [25_000]);
  });

  test('policy never leaves every end alone; on-failure restarts a failure only; always restarts a clean exit too', () => {
    const { clock, scheduler } = setUp();
    const ends: number[] = [];
    assert.deepEqual(scheduler.afterEnd('m', 'never', true, ends, () => undefined), { stay: 'policy' });
    assert.deepEqual(scheduler.afterEnd('m', 'on-failure', false, ends, () => undefined), { stay: 'policy' });
    assert.deepEqual(ends, [], 'an end the policy leaves alone does not count toward a loop');
    assert.deepEqual(scheduler.afterEnd('m', 'always', false, ends, () => undefined), { restartInMs: 1000 });
    assert.equal(clock.pending, 1);
  });

  test('a newer end replaces the pending restart; cancel drops it; after close nothing is scheduled', () => {
    const { clock, scheduler, crash, restarted } = setUp();
    crash();
    crash();
    assert.equal(clock.pending, 1, 'one pending restart per model');
    scheduler.cancel('m');
    clock.advance(10_000);
    assert.equal(restarted(), 0);
    crash();
    scheduler.close();
    assert.equal(clock.pending, 0);
    assert.equal(crash(), null);
    assert.equal(scheduler.closed, true);
    clock.advance(60_000);
    assert.equal(restarted(), 0);
  });
});
