import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { HangarError } from '../../../shared/errors.ts';
import { cachedParser, parseIndex } from './index-parser.ts';
import { keptParse } from './parse-cache.ts';
import { parseGalleryIndex } from './parse.ts';
import { until } from '../testing/until.ts';

const root = mkdtempSync(join(tmpdir(), 'hangar-index-parser-'));
after(() => rmSync(root, { recursive: true, force: true }));

const source = { gallery: 'localai', baseDir: '/srv/gallery', baseUrl: null };
const localai = readFileSync(new URL('../../../bench/fixtures/localai-backend-index.yaml', import.meta.url), 'utf8');
// Large enough for a worker, with entries that fail their checks.
const withBadEntries = `${localai}- name: tags-as-text\n  tags: gpu\n- uri: ./nameless\n`;
const malformed = `${localai}- name: broken\n  tags: [unclosed\n- name: after\n`;

/** How `work` settled, and how often the event loop turned meanwhile: never, for work done on this thread. */
async function turnsDuring<T>(work: () => Promise<T>): Promise<{ settled: PromiseSettledResult<T>; turns: number }> {
  let turns = 0;
  const ticker = setInterval(() => turns++, 1);
  try {
    const [settled] = await Promise.allSettled([work()]);
    return { settled: settled!, turns };
  } finally {
    clearInterval(ticker);
  }
}


test('a large index is parsed off this thread, to the entries and problems a parse here gives', async () => {
  const { settled, turns } = await turnsDuring(() => parseIndex(withBadEntries, source));
  assert.equal(settled.status, 'fulfilled');
  const here = parseGalleryIndex(withBadEntries, source);
  assert.deepEqual((settled as PromiseFulfilledResult<typeof here>).value, here);
  assert.equal(here.errors.length, 2);
  assert.ok(here.entries.length > 900);
  assert.ok(turns > 0, 'the event loop turned while the worker parsed');

  const small = await turnsDuring(() => parseIndex('- name: echo\n  uri: ./echo\n', source));
  assert.equal(small.turns, 0, 'a small index is parsed here, at once');
});

test('a malformed large index fails with the error a parse here gives; the good parse kept before stays', async () => {
  let here: unknown;
  assert.throws(() => parseGalleryIndex(malformed, source), (error: unknown) => ((here = error), true));
  assert.match((here as Error).message, /^gallery "localai": invalid YAML: .*line \d+, column \d+$/);

  const dir = join(root, 'kept');
  const good = keptParse(dir, localai, source);
  const parse = cachedParser(dir);
  await parse(localai, source);
  await until('the parse kept', () => (existsSync(good.file) ? true : undefined), 5000);

  await assert.rejects(parse(malformed, source), (error: unknown) => error instanceof HangarError && error.code === 'bad-input' && error.message === (here as Error).message);
  assert.deepEqual(readdirSync(dir), [good.file.slice(dir.length + 1)], 'nothing kept for the malformed text');

  // The next start reads the good parse back, on this thread, as the worker kept it.
  const restart = await turnsDuring(() => cachedParser(dir)(localai, source));
  assert.equal(restart.turns, 0);
  assert.deepEqual((restart.settled as PromiseFulfilledResult<unknown>).value, parseGalleryIndex(localai, source));
});
