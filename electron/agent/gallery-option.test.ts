import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gallerySpec } from './run-agent.ts';

test('--gallery NAME=LOCATION names a gallery; a bare path or URL does not', () => {
  assert.deepEqual(gallerySpec('team=/srv/gallery/index.yaml'), { name: 'team', location: '/srv/gallery/index.yaml' });
  assert.deepEqual(gallerySpec('localai=https://example.com/index.yaml?x=1'), { name: 'localai', location: 'https://example.com/index.yaml?x=1' });
  assert.deepEqual(gallerySpec('https://example.com/index.yaml?x=1'), { location: 'https://example.com/index.yaml?x=1' });
  assert.deepEqual(gallerySpec('/srv/a=b/index.yaml'), { location: '/srv/a=b/index.yaml' });
});
