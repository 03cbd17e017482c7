import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { HangarError } from '../../../shared/errors.ts';
import { detectCapability } from './capability.ts';
import { isMeta, resolveMetaKey } from './meta.ts';
import { parseGalleryIndex } from './parse.ts';

const fixturePath = new URL('../../../bench/fixtures/localai-backend-index.yaml', import.meta.url);
const source = { gallery: 'localai', baseDir: '/srv/gallery', baseUrl: null };
const fixtureText = readFileSync(fixturePath, 'utf8');
const fixture = parseGalleryIndex(fixtureText, source);

test('the real LocalAI index parses completely and every meta resolves', () => {
  const topLevelItems = fixtureText.split('\n').filter((line) => line.startsWith('- ')).length;
  const { entries, errors } = fixture;
  assert.deepEqual(errors, []);
  assert.equal(entries.length, topLevelItems);
  assert.ok(entries.every((entry) => entry.gallery === 'localai' && entry.baseDir === '/srv/gallery' && entry.baseUrl === null));

  const byName = new Map(entries.map((entry) => [entry.name, entry]));
  const metas = entries.filter(isMeta);
  assert.ok(metas.length > 100, `only ${metas.length} metas`);
  const gpuOnly: string[] = [];
  for (const meta of metas) {
    const capabilities = meta.capabilities!;
    for (const capability of ['default', ...Object.keys(capabilities)]) {
      const pick = resolveMetaKey(capabilities, capability);
      if (!pick) {
        // Only a meta with neither a `default` nor a `cpu` build has nothing for a machine without a GPU.
        assert.equal(capability, 'default');
        assert.ok(!('default' in capabilities) && !('cpu' in capabilities));
        gpuOnly.push(meta.name);
        continue;
      }
      const concrete = byName.get(pick.target);
      assert.ok(concrete, `${meta.name} [${capability}] -> ${pick.target} is missing`);
      assert.ok(!isMeta(concrete) && concrete.uri, `${meta.name} [${capability}] -> ${pick.target} is not concrete`);
    }
  }
  assert.ok(gpuOnly.includes('transformers') && gpuOnly.length < 20, `GPU-only metas: ${gpuOnly.join(', ')}`);

  const llama = byName.get('llama-cpp')!;
  assert.equal(resolveMetaKey(llama.capabilities!, 'default')?.target, 'cpu-llama-cpp');
});

test('on this machine meta llama-cpp resolves to cpu-llama-cpp', (t) => {
  const capability = detectCapability({ PATH: process.env.PATH });
  if (capability !== 'default') return t.skip(`this machine reports "${capability}"`);
  const llama = fixture.entries.find((entry) => entry.name === 'llama-cpp')!;
  assert.deepEqual(resolveMetaKey(llama.capabilities!, capability), { key: 'default', target: 'cpu-llama-cpp' });
});

test('anchors and !!merge keys fill in the merged fields', () => {
  const byName = new Map(fixture.entries.map((entry) => [entry.name, entry]));
  const meta = byName.get('locate-anything')!;
  const concrete = byName.get('cpu-locate-anything-cpp')!;
  assert.ok(meta.license && meta.description && meta.tags.length > 0);
  assert.equal(concrete.license, meta.license);
  assert.equal(concrete.description, meta.description);
  assert.deepEqual(concrete.tags, meta.tags);
  assert.equal(concrete.uri, 'quay.io/go-skynet/local-ai-backends:latest-cpu-locate-anything-cpp');
  assert.deepEqual(concrete.mirrors, ['localai/localai-backends:latest-cpu-locate-anything-cpp']);
  assert.ok(!isMeta(concrete), 'a concrete entry that merged a meta anchor stays concrete');

  // Both spellings of the merge key, and a local override of a merged field.
  const { entries: small } = parseGalleryIndex(
    ['- &base', '  name: base', '  license: mit', '  capabilities: {default: cpu-x}', '- !!merge <<: *base', '  name: tagged', '- <<: *base', '  name: plain', '  license: gpl'].join('\n'),
    source,
  );
  assert.deepEqual(
    small.map((entry) => [entry.name, entry.license, entry.capabilities]),
    [
      ['base', 'mit', { default: 'cpu-x' }],
      ['tagged', 'mit', { default: 'cpu-x' }],
      ['plain', 'gpl', { default: 'cpu-x' }],
    ],
  );
});

test('an anchor merged into many entries expands, an alias bomb is refused', () => {
  const many = ['- &base', '  name: base', '  license: mit', ...Array.from({ length: 300 }, (_, i) => `- !!merge <<: *base\n  name: copy-${i}`)];
  const { entries, errors } = parseGalleryIndex(many.join('\n'), source);
  assert.deepEqual([entries.length, errors.length, entries[300]!.license], [301, 0, 'mit']);

  // Nine levels of ten aliases each: a billion x's once expanded, refused before anything copies it.
  const bomb = ['- &a [x, x, x, x, x, x, x, x, x, x]'];
  for (const [level, previous] of ['b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].map((name, i) => [name, 'abcdefghi'[i]])) {
    bomb.push(`- &${level} [${Array(10).fill(`*${previous}`).join(', ')}]`);
  }
  assert.throws(() => parseGalleryIndex(bomb.join('\n'), source), /gallery "localai": its anchors expand to more than 64\.0 MiB of text; refused/);
  const aliases = ['- &a [x]', `- [${Array(10_001).fill('*a').join(', ')}]`];
  assert.throws(() => parseGalleryIndex(aliases.join('\n'), source), /gallery "localai": invalid YAML: .*alias/i);
});

test('malformed YAML and a top level that is not a list fail naming the gallery', () => {
  assert.throws(
    () => parseGalleryIndex('- name: a\n  tags: [x, y\n- name: b\n', source),
    (error: unknown) => error instanceof HangarError && error.code === 'bad-input' && /^gallery "localai": invalid YAML: .*line \d+/.test(error.message) && !error.message.includes('\n'),
  );
  for (const text of ['name: a\nuri: x\n', 'just text\n']) {
    assert.throws(() => parseGalleryIndex(text, source), /gallery "localai": the index must be a YAML list of backends/);
  }
  assert.deepEqual(parseGalleryIndex('# nothing yet\n', source), { entries: [], errors: [] });
});

test('an entry without a name is reported with its position and skipped; the rest loads', () => {
  const text = ['- name: first', '  uri: ./first', '- uri: ./nameless', '  license: mit', '- name: third', '  uri: ./third'].join('\n');
  const { entries, errors } = parseGalleryIndex(text, source);
  assert.deepEqual(
    entries.map((entry) => entry.name),
    ['first', 'third'],
  );
  assert.deepEqual(errors, ['entry 2 (line 3): has no "name"']);
});

test('an entry whose name no install would take is reported with its position and skipped; the rest loads', () => {
  const text = ['- name: first', '- name: ../evil', '  uri: ./evil', '- name: .hidden', '- name: echo.install-tmp', '- name: last'].join('\n');
  const { entries, errors } = parseGalleryIndex(text, source);
  assert.deepEqual(
    entries.map((entry) => entry.name),
    ['first', 'last'],
  );
  assert.deepEqual(errors, [
    'entry 2 (line 2) "../evil": name may hold only letters, digits, ".", "_", "+" and "-", and must start with a letter or digit',
    'entry 3 (line 4) ".hidden": name may hold only letters, digits, ".", "_", "+" and "-", and must start with a letter or digit',
    'entry 4 (line 5) "echo.install-tmp": name ends in a reserved working-directory suffix',
  ]);
});

test('known fields are type-checked, unknown fields ignored, numbers-looking text kept as written', () => {
  const text = `
- name: good
  version: 1.10
  sha256: ${'AB'.repeat(32)}
  some_future_field: {nested: [1, 2]}
  tags: [a, b]
- name: tags-as-text
  tags: gpu
- name: tags-nested
  tags: [[a]]
- name: caps-as-list
  capabilities: [default]
- name: uri-as-map
  uri: {path: x}
- name: bad-sha
  sha256: abc
- name: true
- just a string
- name: long-version
  version: ${'9'.repeat(129)}
`;
  const { entries, errors } = parseGalleryIndex(text, source);
  assert.equal(entries.length, 1);
  const [good] = entries;
  assert.equal(good!.version, '1.10');
  assert.equal(good!.sha256, 'ab'.repeat(32));
  assert.deepEqual(good!.tags, ['a', 'b']);
  assert.equal(Object.hasOwn(good!, 'some_future_field'), false);
  assert.deepEqual(errors, [
    'entry 2 (line 7) "tags-as-text": "tags" must be a list of strings',
    'entry 3 (line 9) "tags-nested": "tags" must be a list of strings',
    'entry 4 (line 11) "caps-as-list": "capabilities" must be a map of capability to backend name',
    'entry 5 (line 13) "uri-as-map": "uri" must be text',
    'entry 6 (line 15) "bad-sha": "sha256" must be 64 hex digits',
    'entry 7 (line 17): "name" must be text',
    'entry 8 (line 18): is not a mapping',
    'entry 9 (line 19) "long-version": "version" must be at most 128 characters',
  ]);
});
