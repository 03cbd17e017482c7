// Every version of a persistent map reads as it was made, however many versions were made after it or from it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PersistentMap } from './persistent-map.ts';

/** A small seeded generator, so a failure repeats. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

function assertReads(version: PersistentMap<string, number>, expected: Map<string, number>, keys: string[], what: string): void {
  assert.equal(version.size, expected.size, `${what}: size`);
  for (const key of keys) {
    assert.equal(version.get(key), expected.get(key), `${what}: get ${key}`);
    assert.equal(version.has(key), expected.has(key), `${what}: has ${key}`);
  }
}

test('each version reads as it was made, by key and whole, after later versions and branches from older ones', () => {
  const next = random(7);
  const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);
  const versions: { map: PersistentMap<string, number>; expected: Map<string, number> }[] = [{ map: PersistentMap.of([['k0', 0]]), expected: new Map([['k0', 0]]) }];
  for (let step = 1; step < 400; step++) {
    // Mostly from the newest version; now and then a branch from an older one.
    const from = next() < 0.8 ? versions.at(-1)! : versions[Math.floor(next() * versions.length)]!;
    const changes: [string, number | undefined][] = Array.from({ length: 1 + Math.floor(next() * 4) }, () => [keys[Math.floor(next() * keys.length)]!, next() < 0.3 ? undefined : step]);
    const expected = new Map(from.expected);
    for (const [key, value] of changes) {
      if (value === undefined) expected.delete(key);
      else expected.set(key, value);
    }
    versions.push({ map: from.map.with(changes), expected });
    // Some older version, read by key, or whole (which makes it a map of its own from then on).
    const old = versions[Math.floor(next() * versions.length)]!;
    if (next() < 0.1) assert.deepEqual(new Map(old.map), old.expected, `version read whole at step ${step}`);
    assertReads(old.map, old.expected, keys, `an older version at step ${step}`);
  }
  versions.forEach(({ map, expected }, i) => {
    assertReads(map, expected, keys, `version ${i}`);
    assert.deepEqual(new Map(map.entries()), expected, `version ${i} whole`);
    assert.deepEqual([...map.keys()].sort(), [...expected.keys()].sort());
    assert.deepEqual([...map.values()].sort(), [...expected.values()].sort());
  });
});

test('an iteration of the newest version is not changed by the next version made meanwhile', () => {
  const first = PersistentMap.of([
    ['a', 1],
    ['b', 2],
  ]);
  const seen: string[] = [];
  let second: PersistentMap<string, number> | null = null;
  for (const [key] of first) {
    seen.push(key);
    second ??= first.with([
      ['c', 3],
      ['b', undefined],
    ]);
  }
  assert.deepEqual(seen, ['a', 'b']);
  assert.deepEqual([...second!.keys()], ['a', 'c']);
  assert.deepEqual([...first.keys()], ['a', 'b']);
});
