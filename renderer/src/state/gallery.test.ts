import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GalleryEntryView } from '../../../shared/types.ts';
import { allTags, filterEntries, withEntries } from './gallery.ts';

function entry(name: string, patch: Partial<GalleryEntryView> = {}): GalleryEntryView {
  return {
    name, gallery: 'starter', alias: null, version: '1', uri: null, description: null, license: null, tags: [], icon: null,
    installed: false, upgradable: false, compatible: true, meta: null, ...patch,
  };
}

const entries = [
  entry('echo', { installed: true, upgradable: true, tags: ['demo'], description: 'Echoes the prompt' }),
  entry('pyecho', { tags: ['demo', 'python'] }),
  entry('llama', {
    meta: { resolves: 'cpu-llama', capability: 'default', reason: 'default: CPU', picked: false, variants: [], installedAs: null },
    tags: ['llm'],
  }),
];

const names = (list: GalleryEntryView[]) => list.map((e) => e.name);

test('filters by words, status and tag together', () => {
  const all = { query: '', status: 'all', tag: '' } as const;
  assert.deepEqual(names(filterEntries(entries, all)), ['echo', 'pyecho', 'llama']);
  assert.deepEqual(names(filterEntries(entries, { ...all, query: 'PROMPT' })), ['echo']);
  assert.deepEqual(names(filterEntries(entries, { ...all, status: 'installed' })), ['echo']);
  assert.deepEqual(names(filterEntries(entries, { ...all, status: 'not-installed' })), ['pyecho', 'llama']);
  assert.deepEqual(names(filterEntries(entries, { ...all, status: 'upgradable' })), ['echo']);
  assert.deepEqual(names(filterEntries(entries, { ...all, status: 'meta' })), ['llama']);
  assert.deepEqual(names(filterEntries(entries, { ...all, tag: 'python' })), ['pyecho']);
  assert.deepEqual(names(filterEntries(entries, { ...all, query: 'echo', tag: 'demo', status: 'not-installed' })), ['pyecho']);
  assert.deepEqual(allTags(entries), ['demo', 'llm', 'python']);
});

test('an entries event replaces those entries in place and leaves the rest', () => {
  const installed = entry('pyecho', { installed: true });
  const elsewhere = entry('echo', { gallery: 'other', installed: false });
  const next = withEntries(entries, [installed, elsewhere]);
  assert.deepEqual(names(next), ['echo', 'pyecho', 'llama']);
  assert.equal(next[1], installed);
  assert.equal(next[0], entries[0], 'an entry of another gallery with the same name is not this one');
});
