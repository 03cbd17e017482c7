import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRateMeter, etaText, iecBytes, movesBytes, progressText } from './progress.ts';

test('iecBytes speaks in binary units', () => {
  assert.equal(iecBytes(0), '0 B');
  assert.equal(iecBytes(1023), '1023 B');
  assert.equal(iecBytes(1536), '1.5 KiB');
  assert.equal(iecBytes(200 * 1024 * 1024), '200 MiB');
  assert.equal(iecBytes(3 * 1024 ** 3), '3.0 GiB');
  assert.equal(iecBytes(-1), '–');
});

test('etaText rounds up and shows two units', () => {
  assert.equal(etaText(0.2), '1s');
  assert.equal(etaText(185), '3m 05s');
  assert.equal(etaText(2 * 3600 + 4 * 60), '2h 04m');
});

test('the rate comes from the last seconds of samples and restarts when the bytes go back', () => {
  const meter = createRateMeter();
  assert.equal(meter.sample(0, 0), null);
  assert.equal(meter.sample(100, 200), null, 'too short a span to say');
  assert.equal(meter.sample(1024 * 1024, 1000), 1024 * 1024);
  assert.equal(meter.sample(10 * 1024 * 1024, 7000), (9 * 1024 * 1024 * 1000) / 6000, 'samples older than 5 s are dropped');
  assert.equal(meter.sample(0, 7100), null, 'a retry starts over');
});

test('progress shows percent, speed and ETA with a known size, and nothing for phases that move no bytes', () => {
  const fetching = { state: 'running', phase: 'fetching', bytes: 10 * 1024 * 1024, totalBytes: 40 * 1024 * 1024 } as const;
  assert.equal(progressText(fetching, 2 * 1024 * 1024), '10 MiB of 40 MiB · 25% · 2.0 MiB/s · 15s left');
  assert.equal(progressText(fetching, null), '10 MiB of 40 MiB · 25%');
  assert.equal(progressText({ ...fetching, totalBytes: null }, 1024), '10 MiB · 1.0 KiB/s');
  assert.equal(progressText({ ...fetching, phase: 'rolling back', bytes: 0 }, null), null);
  assert.equal(progressText({ ...fetching, phase: 'swapping' }, 5), null);
  assert.equal(movesBytes({ state: 'queued', phase: 'fetching' }), false);
});
