import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { dockerConfigCredentials } from './credentials.ts';
import { selectPlatform } from './platform.ts';
import { isOciReference, parseReference, registryBaseUrl } from './reference.ts';
import { parseChallenge } from './repository.ts';

const DIGEST = `sha256:${'a'.repeat(64)}`;

test('parseReference normalises registries, Docker Hub short names, tags and digests', () => {
  assert.deepEqual(parseReference('quay.io/go-skynet/local-ai-backends:latest-cpu-llama-cpp'), {
    registry: 'quay.io',
    repository: 'go-skynet/local-ai-backends',
    tag: 'latest-cpu-llama-cpp',
    digest: null,
  });
  assert.deepEqual(parseReference('localai/localai-backends:master-cpu'), {
    registry: 'docker.io',
    repository: 'localai/localai-backends',
    tag: 'master-cpu',
    digest: null,
  });
  assert.deepEqual(parseReference('alpine:3'), { registry: 'docker.io', repository: 'library/alpine', tag: '3', digest: null });
  assert.deepEqual(parseReference('oci://127.0.0.1:5000/a/b'), { registry: '127.0.0.1:5000', repository: 'a/b', tag: 'latest', digest: null });
  assert.deepEqual(parseReference(`ghcr.io/o/r:v1@${DIGEST}`), { registry: 'ghcr.io', repository: 'o/r', tag: 'v1', digest: DIGEST });
  assert.deepEqual(parseReference(`alpine@${DIGEST}`), { registry: 'docker.io', repository: 'library/alpine', tag: null, digest: DIGEST });
  assert.equal(parseReference('index.docker.io/library/alpine:3').registry, 'docker.io');
  assert.throws(() => parseReference('Quay.io/UPPER/case:tag'));
});

test('isOciReference claims image references and leaves paths and URLs alone', () => {
  for (const uri of [
    'quay.io/go-skynet/local-ai-backends:latest-cpu-llama-cpp',
    'localai/localai-backends:latest-cpu-whisper',
    'foo:tag',
    `foo@${DIGEST}`,
    'oci://ghcr.io/org/repo:tag',
    'ghcr.io/org/repo',
    'localhost:5000/repo:tag',
    '127.0.0.1:5000/repo',
  ]) {
    assert.equal(isOciReference(uri), true, uri);
  }
  for (const uri of [
    'backends/echo',
    'echo',
    './echo',
    '../echo:1',
    '/opt/backends/echo',
    '~/echo',
    'C:\\backends\\echo',
    'C:/backends/echo',
    'file:///opt/echo',
    'https://example.com/echo.tar.gz',
    'http://127.0.0.1:5000/repo:tag',
    'downloads/echo.tgz',
    'echo.tar',
  ]) {
    assert.equal(isOciReference(uri), false, uri);
  }
});

test('registryBaseUrl: plain http for loopback, registry-1 for Docker Hub, https elsewhere', () => {
  assert.equal(registryBaseUrl('127.0.0.1:5000'), 'http://127.0.0.1:5000');
  assert.equal(registryBaseUrl('localhost:5000'), 'http://localhost:5000');
  assert.equal(registryBaseUrl('docker.io'), 'https://registry-1.docker.io');
  assert.equal(registryBaseUrl('quay.io'), 'https://quay.io');
});

test('parseChallenge reads quoted and bare parameters', () => {
  assert.deepEqual(parseChallenge('Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/alpine:pull"'), {
    scheme: 'bearer',
    params: { realm: 'https://auth.docker.io/token', service: 'registry.docker.io', scope: 'repository:library/alpine:pull' },
  });
  assert.deepEqual(parseChallenge('Basic realm=registry'), { scheme: 'basic', params: { realm: 'registry' } });
  assert.equal(parseChallenge(null), null);
});

test('selectPlatform prefers the exact variant, then none, and never another architecture', () => {
  const entries = [
    { id: 1, platform: { os: 'linux', architecture: 'arm64' } },
    { id: 2, platform: { os: 'linux', architecture: 'arm64', variant: 'v8' } },
    { id: 3, platform: { os: 'linux', architecture: 'amd64' } },
  ];
  assert.equal(selectPlatform(entries, { os: 'linux', architecture: 'arm64', variant: 'v8' })?.id, 2);
  assert.equal(selectPlatform(entries.slice(0, 1), { os: 'linux', architecture: 'arm64', variant: 'v8' })?.id, 1);
  assert.equal(selectPlatform(entries, { os: 'linux', architecture: 'amd64' })?.id, 3);
  assert.equal(selectPlatform(entries, { os: 'linux', architecture: 's390x' }), null);
});

test('docker config.json credentials: per host, Docker Hub under its URL key', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'hangar-docker-config-'));
  try {
    const path = join(dir, 'config.json');
    const auth = (s: string) => Buffer.from(s).toString('base64');
    await writeFile(path, JSON.stringify({ auths: { 'https://index.docker.io/v1/': { auth: auth('hub:pw') }, 'quay.io': { auth: auth('q:p:with:colons') } } }));
    const lookup = dockerConfigCredentials(path);
    assert.deepEqual(await lookup('docker.io'), { username: 'hub', password: 'pw' });
    assert.deepEqual(await lookup('quay.io'), { username: 'q', password: 'p:with:colons' });
    assert.equal(await lookup('ghcr.io'), null);
    assert.equal(await dockerConfigCredentials(join(dir, 'absent.json'))('quay.io'), null);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
