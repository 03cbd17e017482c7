import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, test } from 'node:test';
import { OutputNudge, portAnswers } from './readiness.ts';

describe('readiness', () => {
  test('a nudge ends the sleep between port probes at once; without one it runs its course', async () => {
    const output = new OutputNudge();
    const never = new AbortController().signal;
    const started = performance.now();
    const sleeping = output.sleep(60_000, never);
    output.nudge();
    await sleeping;
    assert.ok(performance.now() - started < 10_000, 'the nudge woke the sleep');
    output.nudge(); // nobody sleeps: nothing happens
    const ran = performance.now();
    await output.sleep(20, never);
    assert.ok(performance.now() - ran >= 19, 'a sleep without a nudge waits its time');
  });

  test('an abort ends the sleep with its reason', async () => {
    const output = new OutputNudge();
    const died = new AbortController();
    const sleeping = output.sleep(60_000, died.signal);
    died.abort(new Error('the backend exited'));
    await assert.rejects(sleeping, /the backend exited/);
    await assert.rejects(output.sleep(10, died.signal), /the backend exited/);
  });

  test('portAnswers is true only while something listens', async () => {
    const server = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as { port: number };
    assert.equal(await portAnswers(port), true);
    await new Promise((resolve) => server.close(resolve));
    assert.equal(await portAnswers(port), false);
  });
});
