import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hidePasswords, holdsPassword } from './url-password.ts';

test('the password of every URL in a text is hidden, up to the last @ before the host, and nothing else is touched', () => {
  assert.equal(hidePasswords('https://ann:s3cret@host/index.yaml'), 'https://ann:***@host/index.yaml');
  assert.equal(hidePasswords('fetch https://ann:p@ss@host/x failed; see http://b:c@d:81'), 'fetch https://ann:***@host/x failed; see http://b:***@d:81');
  assert.equal(hidePasswords('HTTPS://:only%40pw@host/'), 'HTTPS://:***@host/');
  assert.equal(hidePasswords('https://ghp_t0ken@raw.example/x.yaml'), 'https://***@raw.example/x.yaml', 'a token given as the user is hidden whole');
  for (const kept of ['https://host:8080/index.yaml', 'https://host/a@b', 'file:///srv/a:b@c/index.yaml', 'mail ann:pw@host', 'https://host/a?b=c:d@e']) {
    assert.equal(hidePasswords(kept), kept);
    assert.equal(holdsPassword(kept), false);
  }
  assert.equal(holdsPassword('https://ann:x@host/'), true);
});
