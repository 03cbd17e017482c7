// A note is bounded where it is made: an alias shared by thousands of builds names the first and counts the others.
import assert from 'node:assert/strict';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { BackendStore } from './install/store.ts';
import { DirectorySnapshot } from './localai-rows.ts';
import { tempDir } from './testing/fixtures.ts';
import { buildMetadata, writeLocalAiDir } from './testing/localai-layout.ts';

test('an alias of 1,200 builds is noted as "b1 and 1,199 others", and one of two names both', async (t) => {
  const root = await tempDir('alias-notes');
  t.after(() => rm(root, { recursive: true, force: true }));
  const backends = join(root, 'backends');
  await mkdir(backends);
  for (let i = 1; i <= 1200; i++) await writeLocalAiDir(backends, `b${i}`, { runSh: 'script', metadata: buildMetadata(`b${i}`, { alias: 'echo-auto' }) });
  for (const build of ['x-cpu', 'x-cuda']) await writeLocalAiDir(backends, build, { runSh: 'script', metadata: buildMetadata(build, { alias: 'x' }) });

  const rows = (await DirectorySnapshot.read(new BackendStore(backends), 'default')).rows();
  const notes = (name: string) => rows.find((r) => r.name === name)!.localai.join('\n');
  assert.match(notes('echo-auto'), /echo-auto is the alias of b1 and 1,199 others, and LocalAI prefers b\d+ on this machine/);
  assert.ok(notes('echo-auto').length < 300, `the note stays short (${notes('echo-auto').length} characters)`);
  assert.match(notes('x'), /x is the alias of x-cpu and x-cuda, and LocalAI prefers x-c\w+ on this machine/);
});
