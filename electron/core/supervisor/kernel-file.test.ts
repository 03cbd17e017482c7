import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readKernelFile } from './kernel-file.ts';

test('reads a file whole, however long, as readFileSync does, and throws as it does for a process that is gone', { skip: process.platform !== 'linux' }, (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-kernel-file-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // Longer than the first buffer: the buffer grows and keeps what it read.
  const long = join(dir, 'long');
  writeFileSync(long, Array.from({ length: 2000 }, (_, i) => `line ${i}`).join('\n'));
  assert.equal(readKernelFile(long, 'utf8'), readFileSync(long, 'utf8'));
  // A short one read after it is not mixed with what the buffer held.
  assert.equal(readKernelFile(`/proc/${process.pid}/cgroup`, 'utf8'), readFileSync(`/proc/${process.pid}/cgroup`, 'utf8'));
  assert.match(readKernelFile(`/proc/${process.pid}/stat`), new RegExp(`^${process.pid} \\(`));
  assert.throws(() => readKernelFile('/proc/999999999/stat'), { code: 'ENOENT' });
});
