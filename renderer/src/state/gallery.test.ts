import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GalleryEntryView } from '../../../shared/types.ts';
import { allTags, filterBackends, withEntries, type GalleryBackend } from './gallery.ts';

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
const cards = (list: GalleryBackend[]) => list.map((b) => b.followed.name);

test('filters by words, status and tag together', () => {
  const all = { query: '', status: 'all', tag: '' } as const;
  assert.deepEqual(cards(filterBackends(entries, all)), ['echo', 'pyecho', 'llama']);
  assert.deepEqual(cards(filterBackends(entries, { ...all, query: 'PROMPT' })), ['echo']);
  assert.deepEqual(cards(filterBackends(entries, { ...all, status: 'installed' })), ['echo']);
  assert.deepEqual(cards(filterBackends(entries, { ...all, status: 'not-installed' })), ['pyecho', 'llama']);
  assert.deepEqual(cards(filterBackends(entries, { ...all, status: 'upgradable' })), ['echo']);
  assert.deepEqual(cards(filterBackends(entries, { ...all, status: 'meta' })), ['llama']);
  assert.deepEqual(cards(filterBackends(entries, { ...all, tag: 'python' })), ['pyecho']);
  assert.deepEqual(cards(filterBackends(entries, { ...all, query: 'echo', tag: 'demo', status: 'not-installed' })), ['pyecho']);
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

test('a name two galleries list is one card: found by either source, with the status of the one the node follows', () => {
  const other = entry('echo', { gallery: 'team', version: '1.2.0', tags: ['team-only'] });
  const both = [...entries, other];
  const all = { query: '', status: 'all', tag: '' } as const;
  assert.deepEqual(cards(filterBackends(both, all)), ['echo', 'pyecho', 'llama']);
  const [echo] = filterBackends(both, { ...all, query: 'team' });
  assert.deepEqual([echo?.followed, echo?.others], [entries[0], [other]]);
  assert.deepEqual(cards(filterBackends(both, { ...all, tag: 'team-only', status: 'upgradable' })), ['echo']);
});
