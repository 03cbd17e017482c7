import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseSize } from './limits.ts';

describe('parseSize', () => {
  it('reads sizes as users write them, and refuses the rest', () => {
    assert.equal(parseSize('500M'), 500 * 1024 ** 2);
    assert.equal(parseSize('32G'), 32 * 1024 ** 3);
    assert.equal(parseSize('1.5GiB'), 1.5 * 1024 ** 3);
    assert.equal(parseSize('4096'), 4096);
    for (const bad of ['lots', '-1G', '0', '10X', '']) assert.throws(() => parseSize(bad), /is not a size/);
  });
});
