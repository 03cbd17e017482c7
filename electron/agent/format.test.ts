import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { DesiredStateView, JobView, NodeCard } from '../../shared/types.ts';
import { jobEndText, jobLine, matrix, table, upgradeText } from './format.ts';

const job = (patch: Partial<JobView>): JobView => ({
  id: 'j1', node: 'local', kind: 'install', backend: 'echo', state: 'running', phase: 'fetching', bytes: 0, totalBytes: null,
  error: null, notice: null, startedAt: '2026-01-01T00:00:00Z', finishedAt: null, ...patch,
});

test('the CLI progress line speaks IEC units with percent, and no bytes for phases that move none', () => {
  assert.equal(jobLine(job({ bytes: 3 * 1024 * 1024, totalBytes: 12 * 1024 * 1024 })), 'install echo: fetching 3.0 MiB of 12 MiB · 25%');
  assert.equal(jobLine(job({ id: 'j2', bytes: 1536 })), 'install echo: fetching 1.5 KiB');
  assert.equal(jobLine(job({ id: 'j3', kind: 'rollback', phase: 'rolling back' })), 'rollback echo: rolling back');
});

test('a job that went through says what it did and to which version; one with nothing to do says what it found', () => {
  assert.equal(jobEndText(job({ kind: 'upgrade', state: 'done', phase: 'done' }), '2.0.0'), 'upgraded echo to 2.0.0');
  assert.equal(jobEndText(job({ kind: 'install', state: 'done', phase: 'done' }), '1.0.0'), 'installed echo 1.0.0');
  assert.equal(jobEndText(job({ kind: 'rollback', state: 'done', phase: 'done' }), '1.0.0'), 'rolled back echo to 1.0.0');
  assert.equal(jobEndText(job({ kind: 'delete', state: 'done', phase: 'done' }), null), 'deleted echo');
  assert.equal(jobEndText(job({ kind: 'upgrade', state: 'done', phase: 'up to date' }), null), 'upgrade echo: up to date');
});

test('an upgrade says which way it goes, and a new build of the same version as one', () => {
  assert.equal(upgradeText('1.0.0', '1.1.0'), '1.0.0 → 1.1.0');
  assert.equal(upgradeText('1.1.0', '1.0.0'), '1.1.0 → 1.0.0 (gallery went back)');
  assert.equal(upgradeText('1.0.0', '1.0.0'), '1.0.0 → new build');
  assert.equal(upgradeText('1.0.0', null), '1.0.0 → newer');
});

test('a matrix no node answered says so, not that nothing is installed', () => {
  const card = (name: string) => ({ id: `${name}-id`, name, status: 'unknown', reason: 'no broker' }) as unknown as NodeCard;
  const none: DesiredStateView = { available: true, reason: null, desired: [], nodes: [] } as unknown as DesiredStateView;
  assert.match(matrix([{ card: card('a'), backends: null }, { card: card('b'), backends: new Error('not trusted') }], none), /^no node answered\n/);
  assert.match(matrix([{ card: card('a'), backends: [] }, { card: card('b'), backends: null }], none), /^no backends installed on the 1 of 2 nodes that answered\n/);
  assert.match(matrix([{ card: card('a'), backends: [] }], none), /^no backends installed on any node\n/);
});

test("a cell's control characters are escaped before the columns are measured, so the next column stays in line", () => {
  const lines = table([{ name: 'e\x1b[2Jcho', version: '1.0.0' }, { name: 'plain', version: '2.0.0' }], 'none').split('\n');
  assert.equal(lines[1], 'e\\u001b[2Jcho  1.0.0');
  assert.equal(lines[1]!.indexOf('1.0.0'), lines[2]!.indexOf('2.0.0'));
  assert.equal(lines[0]!.indexOf('VERSION'), lines[2]!.indexOf('2.0.0'));
});
