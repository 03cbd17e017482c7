import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JobView } from '../../shared/types.ts';
import { jobLine } from './format.ts';

const job = (patch: Partial<JobView>): JobView => ({
  id: 'j1', node: 'local', kind: 'install', backend: 'echo', state: 'running', phase: 'fetching', bytes: 0, totalBytes: null,
  error: null, notice: null, startedAt: '2026-01-01T00:00:00Z', finishedAt: null, ...patch,
});

test('the CLI progress line speaks IEC units with percent, and no bytes for phases that move none', () => {
  assert.equal(jobLine(job({ bytes: 3 * 1024 * 1024, totalBytes: 12 * 1024 * 1024 })), 'install echo: fetching 3.0 MiB of 12 MiB · 25%');
  assert.equal(jobLine(job({ id: 'j2', bytes: 1536 })), 'install echo: fetching 1.5 KiB');
  assert.equal(jobLine(job({ id: 'j3', kind: 'rollback', phase: 'rolling back' })), 'rollback echo: rolling back');
});
