import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cwdVerdict, exitNote } from './process-text.ts';
import type { ProcessView, ScanEntry } from './types.ts';

const iso = (at: string) => at;

test('an ended process says how it ended, and its last line is labelled as its last output', () => {
  const exit = { code: null, signal: 'SIGKILL', at: 'T', tail: ['starting', 'echo: listening on 127.0.0.1:30100'] };
  assert.equal(exitNote(exit, iso), 'killed by SIGKILL at T; last output: echo: listening on 127.0.0.1:30100');
  assert.equal(exitNote({ ...exit, signal: null, code: 3, tail: [] }, iso), 'exit code 3 at T');
});

test("a supervised process gets its supervisor's verdict, whatever the scan saw; another process gets the scan's", () => {
  const entry: ScanEntry = { pid: 42, command: 'run.sh', cwd: '/b/echo.old', status: 'ok', supervised: true, backend: 'echo' };
  const process = { pid: 42, cwd: 'stale', cwdReason: 'cwd is no longer /b/echo' } as ProcessView;
  assert.deepEqual(cwdVerdict(entry, [process]), { status: 'stale', reason: 'cwd is no longer /b/echo' });
  assert.deepEqual(cwdVerdict({ ...entry, supervised: false }, [process]), { status: 'ok', reason: 'cwd is a live backend directory' });
  assert.deepEqual(cwdVerdict({ ...entry, supervised: false, status: 'stale', cwd: '/b/echo.install-backup (deleted)' }, []), {
    status: 'stale',
    reason: 'cwd was deleted',
  });
});
