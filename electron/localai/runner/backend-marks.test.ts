import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../../core/testing/fixtures.ts';
import { BackendMarks, type MarkCheck } from './backend-marks.ts';

test('marks are checked once a LocalAI version, kept across a restart, dropped one by one, and said beside a failed load', async () => {
  const dir = await tempDir('backend-marks');
  try {
    const file = join(dir, 'state', 'localai-backend-marks.json');
    let checks = 0;
    const check: MarkCheck = async () => {
      checks++;
      return { marked: [{ name: 'cpu-llama-cpp', why: 'new build' }, { name: 'whisper', why: '1.0.0 → 1.1.0' }], unread: null };
    };
    const marks = new BackendMarks(file);
    await marks.load();
    assert.equal(await marks.ran('v3.3.0', check), 'LocalAI v3.3.0: its gallery marks cpu-llama-cpp (new build), whisper (1.0.0 → 1.1.0) for upgrade; upgrade them (hangar upgrade --all, or Settings → LocalAI → Upgrade all)');
    assert.equal(await marks.ran('v3.3.0', check), null, 'the same version is not checked again');
    assert.equal(checks, 1);

    const again = new BackendMarks(file);
    await again.load();
    assert.deepEqual(again.list(), [
      { name: 'cpu-llama-cpp', why: 'new build', since: 'v3.3.0' },
      { name: 'whisper', why: '1.0.0 → 1.1.0', since: 'v3.3.0' },
    ]);
    assert.equal(await again.ran('v3.3.0', check), null, 'nor after a restart');
    // LocalAI names a model's backend as its config does (a meta's name); the runner adds the directory it runs.
    assert.equal(again.loadNote('llama-cpp', 'cpu-llama-cpp'), 'its backend cpu-llama-cpp has a new build since LocalAI v3.3.0: upgrade it (hangar upgrade cpu-llama-cpp, or Settings → LocalAI → Upgrade all)');
    assert.equal(again.loadNote('whisper'), 'its backend whisper has a new version (1.0.0 → 1.1.0) since LocalAI v3.3.0: upgrade it (hangar upgrade whisper, or Settings → LocalAI → Upgrade all)');
    assert.equal(again.loadNote('echo'), null);

    await again.drop((name) => name === 'whisper');
    const dropped = new BackendMarks(file);
    await dropped.load();
    assert.deepEqual(dropped.list().map((m) => m.name), ['cpu-llama-cpp']);
    assert.equal(dropped.loadNote('whisper'), null);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a check that could not read a gallery shows what it found, and is made again at the next start', async () => {
  const dir = await tempDir('backend-marks');
  try {
    const marks = new BackendMarks(join(dir, 'marks.json'));
    await marks.load();
    const unreadable: MarkCheck = async () => ({ marked: [{ name: 'echo', why: 'new build' }], unread: 'https://example.invalid/index.yaml (fetch failed)' });
    assert.equal(
      await marks.ran('v3.3.0', unreadable),
      "LocalAI v3.3.0: its gallery marks echo (new build) for upgrade; upgrade them (hangar upgrade --all, or Settings → LocalAI → Upgrade all); its backends' upgrade check could not read https://example.invalid/index.yaml (fetch failed): it is made again at LocalAI's next start",
    );
    assert.deepEqual(marks.list(), [{ name: 'echo', why: 'new build', since: 'v3.3.0' }]);
    assert.equal(await marks.ran('v3.3.0', async () => ({ marked: [], unread: null })), null);
    assert.deepEqual(marks.list(), [], 'checked again, and found current');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
