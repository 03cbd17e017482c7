import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HangarApi } from '../../shared/api.ts';
import { MODEL_NAME_RULE } from '../../shared/schemas.ts';
import { invokeNode } from './invoke.ts';

// Validation fails before the node is reached, so no node is needed.
const unreachable = {} as HangarApi;

test('a bad model name is answered in words for people, without a field prefix or schema text', async () => {
  for (const model of ['has space', 'x'.repeat(129), '-leading']) {
    const answer = await invokeNode(unreachable, 'load', { node: 'local', backend: 'echo', model });
    assert.deepEqual(answer, { ok: false, error: { code: 'invalid-request', message: MODEL_NAME_RULE } });
  }
  assert.match(MODEL_NAME_RULE, /^Model names can use letters, digits, -, _, \., : and \+.*at most 128 characters$/);
});

test('a terse schema message keeps its field name', async () => {
  const answer = await invokeNode(unreachable, 'install', { node: 'local', name: '../x' });
  assert.equal(answer.ok, false);
  assert.match(!answer.ok ? answer.error.message : '', /^name: /);
});
