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
    assert.deepEqual(answer, { ok: false, error: { code: 'bad-input', message: MODEL_NAME_RULE } });
  }
  assert.match(MODEL_NAME_RULE, /^Model names can use letters, digits, -, _, \., : and \+.*at most 128 characters$/);
});

test('a schema message names its field once, in words, where zod would say it in its own', async () => {
  const said = async (method: string, payload: object) => {
    const answer = await invokeNode(unreachable, method, { node: 'local', ...payload });
    return answer.ok ? null : answer.error;
  };
  assert.deepEqual(await said('install', { name: '../x' }), { code: 'bad-input', message: 'name may hold only letters, digits, ".", "_", "+" and "-", and must start with a letter or digit' });
  assert.deepEqual(await said('load', { backend: 'echo', model: 'm', maxRestarts: 0 }), { code: 'invalid-request', message: 'max restarts must be at least 1' });
  assert.deepEqual(await said('load', { backend: 'echo', model: 'm', restart: 'x' }), { code: 'invalid-request', message: 'restart must be one of never, on-failure, always' });
  assert.deepEqual(await said('info', { node: 42 }), { code: 'invalid-request', message: 'node must be text' });
  assert.deepEqual(await said('waitJob', { id: '../x' }), { code: 'invalid-request', message: 'id: bad job id' });
});
