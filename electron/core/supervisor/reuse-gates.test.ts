// The reuse gates on their own, against a real echo backend and real directories: what may be reused, and the reason
// given for what may not.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { currentPlatform } from '../platform/index.ts';
import { Rechecks } from './rechecks.ts';
import { ProcessRecords, type BackendTarget, type Proc } from './process-records.ts';
import { ReuseGates } from './reuse-gates.ts';
import { rowUsage } from './row-usage.ts';
import { ProcessTable } from './table.ts';
import { echoRow, makeHome, startEchoServer, swapOutOfBand, writeEcho, type Home } from './test-helpers.ts';

describe('reuse gates', () => {
  let home: Home;
  let echo: Awaited<ReturnType<typeof startEchoServer>>;
  let target: BackendTarget;
  let proc: Proc;
  let gates: ReuseGates;

  before(async () => {
    home = makeHome();
    target = { name: 'echo', dir: join(home.backendsDir, 'echo') };
    await writeEcho(target.dir, '1.0.0');
    echo = await startEchoServer(target.dir);
    proc = { ...(await echoRow(echo, 'gated', target.dir)), state: 'ready' };
    const records = new ProcessRecords(new ProcessTable(home.stateDir), rowUsage(currentPlatform()), new EventEmitter());
    records.put(proc);
    gates = new ReuseGates(new Rechecks(records, { endedUnseen: async () => [] }, currentPlatform()), 300);
  });
  after(async () => {
    proc.client.close();
    await echo.stop();
    home.cleanup();
  });

  test('a ready process of the same backend, still in the directory it was started in, is reused', async () => {
    assert.equal(await gates.intact(proc, target), true);
    assert.equal(await gates.unusable(proc, target), null);
    assert.equal(proc.cwd.cwd, 'ok');
  });

  test('another backend, or another directory of the same one, is refused', async () => {
    assert.equal(await gates.unusable(proc, { name: 'other', dir: target.dir }), 'it ran backend echo');
    const elsewhere = join(home.backendsDir, 'elsewhere');
    mkdirSync(elsewhere);
    assert.equal(await gates.intact(proc, { name: 'echo', dir: elsewhere }), false);
  });

  test('a process that does not answer Health in time is not reused', async () => {
    process.kill(echo.child.pid!, 'SIGSTOP');
    try {
      assert.equal(await gates.intact(proc, target), true, 'its directory is intact');
      assert.equal(await gates.unusable(proc, target), 'it did not answer Health within 300 ms');
    } finally {
      process.kill(echo.child.pid!, 'SIGCONT');
    }
  });

  test('a legacy row (no recorded directory) passes while the OS shows its cwd is the target, and not elsewhere', async () => {
    const legacy: Proc = { ...proc, identity: null };
    assert.equal(await gates.intact(legacy, target), true);
    assert.equal(legacy.cwd.cwdReason, 'legacy entry: cwd is live');
    const elsewhere = join(home.backendsDir, 'elsewhere-legacy');
    mkdirSync(elsewhere);
    assert.equal(await gates.intact(legacy, { name: 'echo', dir: elsewhere }), false);
  });

  test('an ended row says how it ended', async () => {
    const ended: Proc = { ...proc, retired: true, state: 'crashed', exit: { code: null, signal: 'SIGKILL', at: new Date().toISOString(), tail: [] } };
    assert.equal(await gates.unusable(ended, target), 'it had crashed (was killed by SIGKILL)');
  });

  test('once a reinstall replaces the directory, the process is stale and refused', async () => {
    await swapOutOfBand(home.backendsDir, 'echo', (dir) => writeEcho(dir, '2.0.0'));
    assert.equal(await gates.intact(proc, target), false);
    assert.equal(proc.cwd.cwd, 'stale');
    assert.equal(await gates.unusable(proc, target), 'its directory was replaced');
  });
});
