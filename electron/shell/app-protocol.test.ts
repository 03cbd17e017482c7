import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { APP_URL, CONTENT_SECURITY_POLICY, appResponseHeaders, resolveAppFile } from './app-protocol.ts';
import { externalUrl, isAppPage, isRemoteRequest } from './trust.ts';

const root = resolve('/opt/hangar/renderer');

describe('app protocol', () => {
  it('serves files under the renderer root', () => {
    assert.equal(resolveAppFile(root, APP_URL), join(root, 'index.html'));
    assert.equal(resolveAppFile(root, 'hangar://app/'), join(root, 'index.html'));
    assert.equal(resolveAppFile(root, 'hangar://app/assets/index-3f2a.js?x=1#y'), join(root, 'assets/index-3f2a.js'));
  });

  it('refuses URLs that escape the root or are not ours', () => {
    for (const url of ['hangar://app/../../etc/passwd', 'hangar://app/%2e%2e/%2e%2e/etc/passwd']) {
      assert.equal(resolveAppFile(root, url), join(root, 'etc/passwd'), 'the URL parser clamps dot segments at the root');
    }
    for (const url of [
      'hangar://app/assets/..%2f..%2f..%2fetc%2fpasswd',
      'hangar://app/..%5c..%5cwindows',
      'hangar://app/a%00.js',
      'hangar://app/%E0%A4%A',
      'hangar://other/index.html',
      'file:///opt/hangar/renderer/index.html',
      'not a url',
    ]) {
      assert.equal(resolveAppFile(root, url), null, url);
    }
  });

  it('sends the CSP and a real content type with every file', () => {
    const headers = appResponseHeaders(join(root, 'assets/index.js'));
    assert.equal(headers['Content-Type'], 'text/javascript; charset=utf-8');
    assert.equal(headers['Content-Security-Policy'], CONTENT_SECURITY_POLICY);
    assert.match(CONTENT_SECURITY_POLICY, /default-src 'self'; script-src 'self'; .*object-src 'none'; base-uri 'none'; frame-ancestors 'none'$/);
    assert.doesNotMatch(CONTENT_SECURITY_POLICY, /unsafe/);
    assert.equal(appResponseHeaders('/x/blob.bin')['Content-Type'], 'application/octet-stream');
  });
});

describe('url policy', () => {
  it('recognises the app page whatever its fragment', () => {
    assert.ok(isAppPage(`${APP_URL}#/gallery?q=1`, APP_URL));
    assert.ok(!isAppPage('hangar://app/index.html.evil', APP_URL));
    assert.ok(!isAppPage('garbage', APP_URL));
  });

  it('opens only http and https links outside the app', () => {
    assert.equal(externalUrl('https://github.com/mudler/LocalAI'), 'https://github.com/mudler/LocalAI');
    for (const url of ['file:///etc/passwd', 'javascript:alert(1)', 'smb://host/share', 'hangar://app/index.html', 'nope']) {
      assert.equal(externalUrl(url), null, url);
    }
  });

  it('blocks network and disk requests from the window', () => {
    for (const url of ['https://example.com/x.js', 'http://127.0.0.1:1/', 'ws://127.0.0.1/', 'file:///etc/passwd', '::']) {
      assert.ok(isRemoteRequest(url), url);
    }
    for (const url of [APP_URL, 'devtools://devtools/bundled/inspector.html', 'data:image/png;base64,AA==']) {
      assert.ok(!isRemoteRequest(url), url);
    }
  });
});
