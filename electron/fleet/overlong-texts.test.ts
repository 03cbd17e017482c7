// A reply with one text over its limit is taken, that text cut and saying so; any other mismatch is still refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nodeResultSchemas } from '../../shared/result-schema.ts';
import { cutOverlongTexts } from './overlong-texts.ts';

const entry = (command: string) => ({ pid: 7, command, cwd: '/b/echo', status: 'ok', supervised: true, backend: 'echo' });

test('an over-long text is cut to its limit and says how long it was; the rest of the reply is kept as sent', () => {
  const reply = [entry('x'.repeat(40_000)), entry('sleep 300')];
  const first = nodeResultSchemas.scan.safeParse(reply);
  assert.equal(first.success, false, 'refused as sent');
  const parsed = nodeResultSchemas.scan.safeParse(cutOverlongTexts(reply, first.error!.issues));
  assert.equal(parsed.success, true);
  const [cut, kept] = parsed.data!;
  assert.equal(cut!.command.length <= 16 * 1024, true);
  assert.match(cut!.command, /^x+ … \[cut by this host: 40,000 characters\]$/);
  assert.deepEqual(kept, entry('sleep 300'));
});

test('a reply of the wrong shape is refused even when a text is over-long too', () => {
  const reply = [{ ...entry('x'.repeat(40_000)), pid: 'seven' }];
  const first = nodeResultSchemas.scan.safeParse(reply);
  assert.equal(first.success, false);
  assert.equal(cutOverlongTexts(reply, first.error!.issues), null);
});
