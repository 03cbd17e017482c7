// A pid the OS gave to an unrelated process is never signalled: not by a stop, nor by the reaper of a killed host.
// The reuse is real: testdata/pid-reuse.ts runs in a pid namespace of its own, where the next pid can be chosen.
// That needs root (CI runs as root); elsewhere the test says loudly that it did not run.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { TS_NODE } from '../testing/ts-node.ts';

describe('pid reuse', { skip: process.platform !== 'linux' && 'pid namespaces are Linux only' }, () => {
  test('a backend killed behind the host\'s back whose pid an impostor took: the stop path and the reaper leave the impostor alone', () => {
    if (process.getuid?.() !== 0) {
      process.stderr.write('\n*** pid reuse test NOT RUN: it makes a pid namespace to reuse a pid for real, which needs root ***\n\n');
      return;
    }
    const driver = join(import.meta.dirname, 'testdata/pid-reuse.ts');
    // A shell is the namespace's init: it reaps the orphans of killed backends, so their pids are free at once.
    const init = ['/bin/sh', '-c', '"$@"; status=$?; exit $status', 'init'];
    const run = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', ...init, process.execPath, ...TS_NODE, driver], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(run.status, 0, `the driver failed: ${run.stderr}`);
    const { stopPath, reaper } = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
    assert.deepEqual(stopPath, { said: 'stopped stopped', impostorAlive: true }, 'the stop path signalled the process that took the pid');
    assert.equal(reaper.reapers, 1, 'the host had its reaper');
    assert.equal(reaper.genuineGone, true, 'the reaper ended the backend that was still its own');
    assert.equal(reaper.impostorAlive, true, 'the reaper signalled the process that took the pid');
  });
});
