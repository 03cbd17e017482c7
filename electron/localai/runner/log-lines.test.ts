// LocalAI's kept output: lines joined across chunks, bounded, the API key blotted out wherever it shows.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LogLines } from './log-lines.ts';

test('a line cut between chunks is joined, each stream on its own, and the key never kept', () => {
  const logs = new LogLines(() => 'sk-secret');
  logs.write('stdout', 'INF api key sk-sec');
  logs.write('stderr', 'ERR half');
  logs.write('stdout', 'ret loaded\nINF next\n');
  logs.write('stderr', ' of it\n');
  assert.deepEqual(logs.last(), ['INF api key *** loaded', 'INF next', 'ERR half of it']);
});

test('only the last lines are kept, and a mark gives those written after it', () => {
  const logs = new LogLines(() => null, 3);
  logs.note('one');
  const mark = logs.mark();
  logs.write('stdout', 'a\nb\nc\nd\n');
  assert.deepEqual(logs.last(), ['b', 'c', 'd']);
  assert.deepEqual(logs.since(mark, 2), ['c', 'd']);
  assert.deepEqual(logs.since(logs.mark(), 5), []);
});

test("the lines since a mark are LocalAI's own, never Hangar's about it", () => {
  const logs = new LogLines(() => null);
  logs.note('LocalAI install failed: refused LocalAI v3.0.0');
  const mark = logs.mark();
  logs.note('started local-ai (pid 7)');
  logs.write('stderr', 'ERR broken\n');
  logs.note('LocalAI (pid 7) ended by itself: exit code 1');
  assert.deepEqual(logs.since(mark, 20), ['ERR broken']);
  assert.equal(logs.last().length, 4, 'the log keeps them all');
});
