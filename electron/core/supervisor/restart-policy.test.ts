// The restart rules on a clock the test turns by hand: backoff, the crash-loop window, policies, cancellation.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RestartPolicy } from '../../../shared/index.ts';
import { RestartScheduler, type ModelRestart, type RestartClock, type RestartHistory, type RestartRules } from './restart-policy.ts';

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

const rules: RestartRules = { baseMs: 1000, maxMs: 4000, quickMs: 10_000, loopLimit: 5 };

/** A process of model m ends: by default a crash soon after its start. */
function setUp(given: Partial<RestartRules> = {}, asked: Omit<ModelRestart, 'policy'> = {}) {
  const clock = new ManualClock();
  const scheduler = new RestartScheduler({ ...rules, ...given }, clock);
  const history: RestartHistory = { quickEnds: 0, backoffMs: 0 };
  let restarts = 0;
  const crash = (uptimeMs = 100) => scheduler.afterEnd('m', { policy: 'on-failure', ...asked }, true, uptimeMs, history, () => restarts++);
  return { clock, scheduler, history, crash, restarted: () => restarts };
}

describe('restart scheduler', () => {
  test('the first two ends soon after the start restart at once, as PM2; the next in a row wait baseMs, doubling up to maxMs; the restart fires when it has passed', () => {
    const { clock, crash, restarted } = setUp({ loopLimit: 6 });
    const backoffs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const verdict = crash();
      assert.ok(verdict && 'restartInMs' in verdict);
      backoffs.push(verdict.restartInMs);
      if (verdict.restartInMs > 0) {
        clock.advance(verdict.restartInMs - 1);
        assert.equal(restarted(), i, 'not before its backoff');
      }
      clock.advance(verdict.restartInMs > 0 ? 1 : 0);
      assert.equal(restarted(), i + 1);
    }
    assert.deepEqual(backoffs, [0, 0, 1000, 2000, 4000]);
  });

  test('a process that ran quickMs or longer is restarted at once, as PM2 restarts it, and the wait and the count start over', () => {
    const { clock, crash, restarted, history } = setUp();
    assert.deepEqual(crash(60_000), { restartInMs: 0 }, 'the first end after a healthy run');
    clock.advance(0);
    assert.equal(restarted(), 1, 'restarted with no wait');
    assert.deepEqual(crash(200), { restartInMs: 0 }, 'it ended right after its start: once is restarted at once');
    assert.deepEqual(crash(200), { restartInMs: 0 }, 'twice in a row too (PM2 restarts it in 344 ms)');
    assert.deepEqual(crash(200), { restartInMs: 1000 }, 'three times in a row waits');
    clock.advance(1000);
    assert.deepEqual(crash(9_999), { restartInMs: 2000 }, 'just under quickMs is still quick');
    clock.advance(2000);
    assert.deepEqual(crash(10_000), { restartInMs: 0 }, 'quickMs or longer: at once again');
    assert.deepEqual(history, { quickEnds: 0, backoffMs: 0 });
    assert.deepEqual(crash(100), { restartInMs: 0 }, 'the count starts over');
    assert.deepEqual(crash(100), { restartInMs: 0 });
    assert.deepEqual(crash(100), { restartInMs: 1000 }, 'and the wait from baseMs');
  });

  test('ends after runs that lasted never make a crash loop, however many', () => {
    const { crash } = setUp();
    for (let i = 0; i < 20; i++) assert.deepEqual(crash(11_000), { restartInMs: 0 });
  });

  test("a model's own delay and restart limit replace the host's", () => {
    const { clock, crash } = setUp({}, { delayMs: 250, maxRestarts: 5 });
    assert.deepEqual(crash(), { restartInMs: 0 });
    assert.deepEqual(crash(), { restartInMs: 0 });
    assert.deepEqual(crash(), { restartInMs: 250 });
    clock.advance(250);
    assert.deepEqual(crash(), { restartInMs: 500 });
    clock.advance(500);
    assert.deepEqual(crash(), { stay: 'loop', ends: 5 });
    const none = setUp({}, { delayMs: 0 });
    assert.deepEqual(none.crash(), { restartInMs: 0 }, 'a delay of 0: every restart at once');
    assert.deepEqual(none.crash(), { restartInMs: 0 });
  });

  test('loopLimit quick ends in a row leave the model crash-looping, with no restart scheduled', () => {
    const { clock, scheduler, crash, restarted } = setUp({ loopLimit: 3 });
    crash();
    clock.advance(0);
    crash();
    clock.advance(0);
    assert.deepEqual(crash(), { stay: 'loop', ends: 3 }, 'the limit holds before any backoff');
    assert.equal(clock.pending, 0);
    clock.advance(60_000);
    assert.equal(restarted(), 2);
    assert.equal(scheduler.closed, false);
  });

  test('policy never leaves every end alone; on-failure restarts a failure only; always restarts a clean exit too', () => {
    const { clock, scheduler } = setUp();
    const history: RestartHistory = { quickEnds: 0, backoffMs: 0 };
    const end = (policy: RestartPolicy, failed: boolean) => scheduler.afterEnd('m', { policy }, failed, 100, history, () => undefined);
    assert.deepEqual(end('never', true), { stay: 'policy' });
    assert.deepEqual(end('on-failure', false), { stay: 'policy' });
    assert.deepEqual(history, { quickEnds: 0, backoffMs: 0 }, 'an end the policy leaves alone does not count toward a loop');
    assert.deepEqual(end('always', false), { restartInMs: 0 });
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
