// metadata.json byte for byte as LocalAI writes it. The expected texts are what Go's json.MarshalIndent and
// time.Format(time.RFC3339) print for LocalAI's BackendMetadata struct (run with Go 1.19 on the same values).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { localaiTimestamp, parseMetadata, serializeMetadata, type BackendMetadata } from './metadata.ts';

const savedTz = process.env.TZ;
after(() => {
  if (savedTz === undefined) delete process.env.TZ;
  else process.env.TZ = savedTz;
});

const none: BackendMetadata = { name: '', alias: null, metaBackendFor: null, galleryUrl: null, installedAt: '', version: null, uri: null, digest: null, sha256: null };

test('installed_at in LocalAI format: local time, whole seconds, the zone offset', () => {
  const at = new Date(1787431443_000 + 987); // milliseconds are dropped, as Go's RFC3339 layout drops them
  const table: [string, string][] = [
    ['UTC', '2026-08-22T20:44:03Z'],
    ['Asia/Kolkata', '2026-08-23T02:14:03+05:30'],
    ['America/St_Johns', '2026-08-22T18:14:03-02:30'],
    ['Europe/Berlin', '2026-08-22T22:44:03+02:00'],
  ];
  for (const [zone, expected] of table) {
    process.env.TZ = zone;
    assert.equal(localaiTimestamp(at), expected, zone);
  }
});

test('metadata.json bytes are those LocalAI writes: struct key order, two-space indent, Go escapes, no newline', () => {
  const concrete: BackendMetadata = {
    ...none,
    alias: 'llama-cpp',
    name: 'cpu-llama-cpp',
    galleryUrl: 'github:mudler/LocalAI/backend/index.yaml@master',
    installedAt: '2026-08-22T22:44:03+02:00',
    version: '<1.0&>',
    uri: 'quay.io/go-skynet/local-ai-backends:latest-cpu-llama-cpp',
    digest: 'sha256:abc',
  };
  const meta: BackendMetadata = { ...none, metaBackendFor: 'cpu-llama-cpp', name: 'llama-cpp', installedAt: '2026-08-22T22:44:03+02:00' };
  const table: [BackendMetadata, string][] = [
    [
      concrete,
      '{\n  "alias": "llama-cpp",\n  "name": "cpu-llama-cpp",\n  "gallery_url": "github:mudler/LocalAI/backend/index.yaml@master",\n  "installed_at": "2026-08-22T22:44:03+02:00",\n  "version": "\\u003c1.0\\u0026\\u003e",\n  "uri": "quay.io/go-skynet/local-ai-backends:latest-cpu-llama-cpp",\n  "digest": "sha256:abc"\n}',
    ],
    [meta, '{\n  "meta_backend_for": "cpu-llama-cpp",\n  "name": "llama-cpp",\n  "installed_at": "2026-08-22T22:44:03+02:00"\n}'],
  ];
  for (const [metadata, goBytes] of table) {
    assert.equal(serializeMetadata(metadata), goBytes);
    assert.deepEqual(parseMetadata(goBytes, 'dir', ''), metadata, 'reads back what it wrote');
  }
  const withSha = serializeMetadata({ ...concrete, sha256: 'f'.repeat(64) });
  assert.ok(withSha.endsWith(`"digest": "sha256:abc",\n  "sha256": "${'f'.repeat(64)}"\n}`), 'Hangar\'s own sha256 goes last');
});
