import assert from 'node:assert/strict';
import { test } from 'node:test';
import { followedByName, sourcesByName } from './gallery-sources.ts';

test('the first gallery that lists a name is the one followed; later ones are other sources of it', () => {
  const entries = [
    { name: 'echo', gallery: 'mine', version: '1.2.0' },
    { name: 'llama', gallery: 'mine', version: '3' },
    { name: 'Echo', gallery: 'starter', version: '1.0.0' },
  ];
  assert.deepEqual(sourcesByName(entries), [
    { key: 'echo', followed: entries[0], others: [entries[2]] },
    { key: 'llama', followed: entries[1], others: [] },
  ]);
  assert.equal(followedByName(entries).get('echo'), entries[0]);
});
