import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JobView } from '../../../shared/types.ts';
import { fromJobs, withJob } from './jobs.ts';

function job(id: string, backend: string, startedAt: string, state: JobView['state'] = 'running'): JobView {
  return { id, node: 'local', kind: 'install', backend, state, phase: 'fetch', bytes: 0, totalBytes: null, error: null, notice: null, startedAt, finishedAt: null };
}

test('each backend shows its most recent job, whatever order the jobs arrive in', () => {
  const state = fromJobs([job('2', 'echo', '2025-01-01T00:00:02Z'), job('1', 'echo', '2025-01-01T00:00:01Z'), job('3', 'py', '2025-01-01T00:00:00Z')]);
  assert.deepEqual(state.latestByBackend, { echo: '2', py: '3' });
  const updated = withJob(state, job('2', 'echo', '2025-01-01T00:00:02Z', 'failed'));
  assert.equal(updated.byId['2']?.state, 'failed');
  assert.equal(updated.latestByBackend, state.latestByBackend, 'an update to the latest job keeps the index');
  const older = withJob(updated, job('1', 'echo', '2025-01-01T00:00:01Z', 'done'));
  assert.equal(older.latestByBackend.echo, '2');
});
