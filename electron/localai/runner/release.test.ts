// LocalAI's release names and checksums files, as its launcher reads them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checksumOf, isOlder, releaseFiles, releasePlatform, releaseTag } from './release.ts';

const SHA = 'a'.repeat(64);

test('release names are those of LocalAI’s launcher, with Go’s os and arch', () => {
  assert.equal(releasePlatform('linux', 'x64'), 'linux-amd64');
  assert.equal(releasePlatform('darwin', 'arm64'), 'darwin-arm64');
  assert.equal(releasePlatform('win32', 'x64'), null);
  assert.equal(releasePlatform('linux', 'ia32'), null);
  assert.deepEqual(releaseFiles('https://mirror.example/', '3.1.0', 'linux-arm64'), {
    tag: 'v3.1.0',
    source: 'https://mirror.example',
    releases: 'https://mirror.example/mudler/LocalAI/releases',
    asset: 'local-ai-v3.1.0-linux-arm64',
    binaryUrl: 'https://mirror.example/mudler/LocalAI/releases/download/v3.1.0/local-ai-v3.1.0-linux-arm64',
    checksumsUrl: 'https://mirror.example/mudler/LocalAI/releases/download/v3.1.0/LocalAI-v3.1.0-checksums.txt',
  });
  assert.throws(() => releaseTag('latest'), /a LocalAI version looks like v3\.1\.0/);
  assert.throws(() => releaseTag('v3.1.0/../x'), /looks like/);
});

test('a checksum is the one listed for exactly that file, in sha256sum text or binary mode', () => {
  const text = [`${'b'.repeat(64)}  local-ai-v3.1.0-linux-amd64.tar.gz`, `${SHA.toUpperCase()} *local-ai-v3.1.0-linux-amd64`, ''].join('\n');
  assert.equal(checksumOf(text, 'local-ai-v3.1.0-linux-amd64'), SHA);
  assert.equal(checksumOf(text, 'local-ai-v3.1.0-linux-arm64'), null);
  assert.equal(checksumOf('not-a-hash  local-ai-v3.1.0-linux-amd64\n', 'local-ai-v3.1.0-linux-amd64'), null);
  assert.equal(checksumOf('', 'local-ai-v3.1.0-linux-amd64'), null);
});

test('a release is older by its numbers, not by its text', () => {
  assert.equal(isOlder('v3.9.0', 'v3.10.0'), true);
  assert.equal(isOlder('v3.10.0', 'v3.9.0'), false);
  assert.equal(isOlder('v3.2.0', 'v3.2.0'), false);
  assert.equal(isOlder('v2.29.9', 'v3.0.0'), true);
});
