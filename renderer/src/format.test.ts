import { test } from 'node:test';
import assert from 'node:assert/strict';
import { humanBytes, humanDuration, versionParts } from './format.ts';

test('humanBytes picks a binary unit', () => {
  assert.equal(humanBytes(0), '0 B');
  assert.equal(humanBytes(1023), '1023 B');
  assert.equal(humanBytes(1536), '1.5 KiB');
  assert.equal(humanBytes(200 * 1024 * 1024), '200 MiB');
  assert.equal(humanBytes(-1), '–');
});

test('humanDuration shows the two largest units', () => {
  assert.equal(humanDuration(999), '0s');
  assert.equal(humanDuration(42_000), '42s');
  assert.equal(humanDuration(185_000), '3m 05s');
  assert.equal(humanDuration(2 * 3600_000 + 4 * 60_000), '2h 04m');
  assert.equal(humanDuration(3 * 86400_000 + 2 * 3600_000), '3d 02h');
  assert.equal(humanDuration(-5), '0s');
});

test("versionParts shortens LocalAI's commit as git does, and keeps it whole", () => {
  assert.deepEqual(versionParts('v3.9.0 (82c191afadf5f005281e798ccfa0ffd0d5805030)'), {
    tag: 'v3.9.0',
    commit: { full: '82c191afadf5f005281e798ccfa0ffd0d5805030', short: '82c191afadf5' },
  });
  assert.deepEqual(versionParts('v3.9.0 (82c191a)'), { tag: 'v3.9.0', commit: { full: '82c191a', short: '82c191a' } });
  // No commit, or something in brackets that is none: the text as it is.
  assert.deepEqual(versionParts('v3.9.0'), { tag: 'v3.9.0', commit: null });
  assert.deepEqual(versionParts(' ()'), { tag: '()', commit: null });
  assert.deepEqual(versionParts('v3.9.0 (dev build)'), { tag: 'v3.9.0 (dev build)', commit: null });
});
