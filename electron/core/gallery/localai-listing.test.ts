// A listing brought up to date from the previous one must be exactly LocalAI's listing of the directory as it is now.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { localaiListing, updatedListing, type DirectoryFacts, type LocalAiListing } from './localai-listing.ts';

const plain = (dir: string, runSh: DirectoryFacts['runSh'] = 'file', name = dir): DirectoryFacts => ({ dir, runSh, metadata: { name, alias: '', metaBackendFor: '' }, error: null });
const meta = (dir: string, name: string, build: string): DirectoryFacts => ({ dir, runSh: 'missing', metadata: { name, alias: '', metaBackendFor: build }, error: null });
const aliased = (dir: string, alias: string): DirectoryFacts => ({ dir, runSh: 'file', metadata: { name: dir, alias, metaBackendFor: '' }, error: null });

const byKey = <V>(entries: Iterable<[string, V]>) => [...entries].sort(([a], [b]) => (a < b ? -1 : 1));

function comparable(listing: LocalAiListing) {
  const { error, backends, names, references, dependents } = listing;
  return { error, backends: byKey(backends), names: byKey(names), references: byKey(references), dependents: byKey(dependents) };
}

/** The update from `before` to `after`, checked against a whole listing of `after` whenever it is given. */
function update(before: DirectoryFacts[], after: DirectoryFacts[]): LocalAiListing | null {
  const previous = localaiListing(before, 'default');
  const was = new Map(before.map((d) => [d.dir, d]));
  const now = new Map(after.map((d) => [d.dir, d]));
  const changed = [...new Set([...was.keys(), ...now.keys()])].filter((dir) => was.get(dir) !== now.get(dir));
  const updated = updatedListing(previous, changed.map((dir) => ({ dir, before: was.get(dir), now: now.get(dir) })));
  if (updated) assert.deepEqual(comparable(updated), comparable(localaiListing(after, 'default')));
  return updated;
}

describe('updatedListing', () => {
  const base = [plain('a'), plain('b'), meta('m', 'llama', 'cpu-llama'), plain('cpu-llama'), aliased('x-cpu', 'x'), aliased('x-cuda', 'x'), plain('z', 'missing')];

  test('a plain directory made, removed, renamed or given another run.sh is listed as a whole listing lists it', () => {
    assert.ok(update(base, [...base, plain('c')]), 'made');
    assert.ok(update(base, base.filter((d) => d.dir !== 'b')), 'removed');
    assert.ok(update(base, base.map((d) => (d.dir === 'a' ? plain('a', 'directory') : d))), 'run.sh became a directory');
    assert.ok(update(base, base.map((d) => (d.dir === 'z' ? plain('z', 'file') : d))), 'run.sh appeared');
    assert.ok(update(base, base.map((d) => (d.dir === 'a' ? plain('a', 'file', 'other-name') : d))), 'its metadata names it otherwise');
  });

  test('what another key depends on takes a whole listing: a meta\'s build, an alias, a key a meta or alias names', () => {
    assert.equal(update(base, base.filter((d) => d.dir !== 'cpu-llama')), null, "a meta's build removed");
    assert.equal(update(base, [...base, plain('llama')]), null, "a directory of a meta's name");
    assert.equal(update(base, [...base, plain('x')]), null, 'a directory of an alias');
    assert.equal(update(base, [...base, aliased('x-vulkan', 'x')]), null, 'a member of an alias group');
    assert.equal(update(base, [...base, meta('n', 'n', 'a')]), null, 'a new meta');
    const broken: DirectoryFacts = { dir: 'c', runSh: 'file', metadata: null, error: 'unexpected end of JSON input' };
    assert.equal(update(base, [...base, broken]), null, 'an unreadable metadata.json, which makes LocalAI list nothing');
  });

  test('many plain changes at once, among metas and alias groups, still match a whole listing', () => {
    const many = Array.from({ length: 200 }, (_, i) => plain(`backend-${String(i).padStart(3, '0')}`, i % 7 === 0 ? 'missing' : 'file'));
    const before = [...base, ...many];
    const after = [...base, ...many.filter((_, i) => i % 3 !== 0).map((d, i) => (i % 5 === 0 ? plain(d.dir, 'file', `${d.dir}-renamed`) : d)), plain('new-one')];
    assert.ok(update(before, after));
  });
});
