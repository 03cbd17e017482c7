import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BackendStore, type SwapHooks, type SwapStep } from './store.ts';
import { SwapJournal } from './swap-journal.ts';
import { tempRoot } from './testdata/fixtures.ts';
import { TS_NODE } from '../testing/ts-node.ts';

const child = fileURLToPath(new URL('./testdata/swap-child.ts', import.meta.url));
const steps: SwapStep[] = ['staged', 'backup-renamed', 'live-renamed', 'cleanup-done'];

async function writeTree(dir: string, version: string): Promise<void> {
  await mkdir(join(dir, 'lib'), { recursive: true });
  await writeFile(join(dir, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
  await writeFile(join(dir, 'VERSION'), version);
  await writeFile(join(dir, 'lib', 'data'), `${version} data`);
}

function version(dir: string): string {
  return readFileSync(join(dir, 'VERSION'), 'utf8');
}

const previousOf = (backends: string) => join(backends, '.hangar', 'previous', 'demo');

function leftIn(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** The rule: a whole live tree holding one of the allowed versions; no working dir but an intended rollback tree. */
function assertWhole(backends: string, allowed: string[]): void {
  const live = join(backends, 'demo');
  assert.ok(allowed.includes(version(live)), `live holds ${version(live)}`);
  assert.ok(statSync(join(live, 'run.sh')).isFile());
  assert.equal(readFileSync(join(live, 'lib', 'data'), 'utf8'), `${version(live)} data`, 'live tree is whole');
  const left = readdirSync(backends).sort();
  assert.ok(left.every((n) => n === 'demo' || n === '.hangar'), `left: ${left.join(', ')}`);
  for (const kind of ['staging', 'backup', 'trash', 'journal']) assert.deepEqual(leftIn(join(backends, '.hangar', kind)), [], `${kind} is empty`);
  if (leftIn(join(backends, '.hangar', 'previous')).includes('demo')) {
    const previous = previousOf(backends);
    assert.ok(allowed.includes(version(previous)) && version(previous) !== version(live));
    assert.equal(readFileSync(join(previous, 'lib', 'data'), 'utf8'), `${version(previous)} data`);
  }
}

function runChild(backends: string, action: string, step: SwapStep | 'stopping'): void {
  const run = spawnSync(process.execPath, [...TS_NODE, child, backends, action, step], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.signal, 'SIGKILL', `child died at ${step}: ${run.stderr}`);
}

describe('crash recovery: a live backend always survives a process killed mid-swap', () => {
  for (const step of steps) {
    it(`upgrade killed at "${step}"`, async (t) => {
      const backends = join(await tempRoot(t), 'backends');
      await writeTree(join(backends, 'demo'), 'old');
      await writeTree(previousOf(backends), 'older');
      runChild(backends, 'commit', step);
      const { done, interrupted } = await new BackendStore(backends).recover();
      assertWhole(backends, ['old', 'new', 'older']);
      const live = version(join(backends, 'demo'));
      // Until the swap settles, the new tree has not passed its gate: a crash before puts the old one back.
      assert.equal(live, step === 'cleanup-done' ? 'new' : 'old');
      if (step !== 'cleanup-done') assert.ok(done.length > 0, 'recovery reports what it did');
      assert.equal(version(previousOf(backends)), live === 'new' ? 'old' : 'older', 'the rollback target is as it was');
      const swapped = step === 'backup-renamed' || step === 'live-renamed';
      assert.deepEqual(interrupted.map((s) => [s.name, s.outcome, s.phase]), swapped ? [['demo', 'rolled back', step === 'live-renamed' ? 'gate' : 'swapping']] : []);
    });
  }

  it('an upgrade killed while the stop before its swap waits: the old tree stays, and the journal names the stopped models', async (t) => {
    const backends = join(await tempRoot(t), 'backends');
    await writeTree(join(backends, 'demo'), 'old');
    runChild(backends, 'commit', 'stopping');
    const { interrupted } = await new BackendStore(backends).recover();
    assertWhole(backends, ['old']);
    assert.deepEqual(
      interrupted.map((s) => [s.name, s.outcome, s.phase, s.note?.stopped]),
      [['demo', 'rolled back', 'swapping', [{ model: 'm1', backend: 'demo' }]]],
      'the next start runs m1 again',
    );
  });

  it('a host killed before the gate\'s entry was on disk, both renames done: swapped back, as stopped during the health gate', async (t) => {
    const backends = join(await tempRoot(t), 'backends');
    await writeTree(join(backends, 'demo'), 'new');
    await writeTree(join(backends, '.hangar', 'backup', 'demo'), 'old');
    await new SwapJournal(join(backends, '.hangar', 'journal')).write({ name: 'demo', swap: 'commit', phase: 'swapping', replacing: true, note: null });
    const { done, interrupted } = await new BackendStore(backends).recover();
    assertWhole(backends, ['old']);
    assert.equal(version(join(backends, 'demo')), 'old');
    assert.deepEqual(done, ['demo: swapped back: the host stopped during the health gate']);
    assert.deepEqual(interrupted.map((s) => [s.outcome, s.phase]), [['rolled back', 'gate']]);
  });

  it('a stop before a swap that fails after naming what it stops leaves the old tree and no journal', async (t) => {
    const backends = join(await tempRoot(t), 'backends');
    await writeTree(join(backends, 'demo'), 'old');
    const store = new BackendStore(backends);
    const staged = await store.stage('demo');
    await writeTree(staged, 'new');
    const hooks: SwapHooks = {
      note: () => ({ job: null, verb: 'upgrade', from: 'old', to: 'new', stopped: [{ model: 'm1', backend: 'demo' }] }),
      beforeSwap: async (_live, noteKnown) => {
        noteKnown();
        throw new Error('m1 would not stop');
      },
    };
    await assert.rejects(store.commit('demo', staged, hooks), /m1 would not stop/);
    await store.discard(staged); // as an install does when its commit fails
    assertWhole(backends, ['old']);
    assert.deepEqual((await store.recover()).interrupted, [], 'nothing for the next start to undo');
  });

  for (const step of steps.filter((s) => s !== 'staged')) {
    it(`rollback killed at "${step}", with stale staging lying around`, async (t) => {
      const backends = join(await tempRoot(t), 'backends');
      await writeTree(join(backends, 'demo'), 'new');
      await writeTree(previousOf(backends), 'old');
      await writeTree(join(backends, '.hangar', 'staging', 'demo.0123456789ab'), 'half');
      runChild(backends, 'rollback', step);
      await new BackendStore(backends).recover();
      assertWhole(backends, ['old', 'new']);
      assert.equal(version(join(backends, 'demo')), step === 'cleanup-done' ? 'old' : 'new', 'swapped back unless it settled');
      assert.ok(leftIn(join(backends, '.hangar', 'previous')).includes('demo'), 'the other version is kept');
    });
  }

  it('a first install killed before its rename leaves no backend and no staging', async (t) => {
    const backends = join(await tempRoot(t), 'backends');
    await mkdir(backends, { recursive: true });
    runChild(backends, 'commit', 'staged');
    assert.deepEqual((await new BackendStore(backends).recover()).done, ['demo: removed stale staging']);
    assert.deepEqual(readdirSync(backends), ['.hangar']);
    assert.deepEqual(leftIn(join(backends, '.hangar', 'staging')), []);
  });

  it('a first install killed during its health gate leaves no backend', async (t) => {
    const backends = join(await tempRoot(t), 'backends');
    await mkdir(backends, { recursive: true });
    runChild(backends, 'commit', 'live-renamed');
    const { done, interrupted } = await new BackendStore(backends).recover();
    assert.deepEqual(done, ['demo: swapped back: the host stopped during the health gate']);
    assert.deepEqual(interrupted.map((s) => [s.outcome, s.replacing]), [['rolled back', false]]);
    assert.deepEqual(readdirSync(backends), ['.hangar']);
    for (const kind of ['staging', 'backup', 'trash', 'journal']) assert.deepEqual(leftIn(join(backends, '.hangar', kind)), [], `${kind} is empty`);
  });

  it("moves Hangar 0.1's demo.previous out of LocalAI's listing and leaves LocalAI's own staging alone", async (t) => {
    const backends = join(await tempRoot(t), 'backends');
    await writeTree(join(backends, 'demo'), 'new');
    await writeTree(join(backends, 'demo.previous'), 'old');
    await writeTree(join(backends, 'other.install-tmp'), 'localai is installing this');
    assert.deepEqual((await new BackendStore(backends).recover()).done, ['demo: moved its rollback tree out of the backends listing']);
    assert.equal(version(previousOf(backends)), 'old');
    assert.deepEqual(readdirSync(backends).sort(), ['.hangar', 'demo', 'other.install-tmp']);
  });

  it("leaves LocalAI's leftovers as LocalAI's own start leaves them; each is listed, removable, and a backup restorable", async (t) => {
    // [leftover, is `demo` there, can it be restored]
    const table: [string, boolean, boolean][] = [
      ['demo.install-backup', false, true],
      ['demo.backup', false, true],
      ['demo.install-backup', true, false],
      ['demo.install-tmp', false, false],
      ['demo.upgrade-tmp', false, false],
    ];
    for (const [leftover, live, restorable] of table) {
      const backends = join(await tempRoot(t), 'backends');
      await writeTree(join(backends, leftover), 'old');
      if (live) await writeTree(join(backends, 'demo'), 'new');
      const store = new BackendStore(backends);
      assert.deepEqual((await store.recover()).done, [], `${leftover}: nothing done at start`);
      assert.equal(version(join(backends, leftover)), 'old');
      const listed = (await store.listAll()).find((b) => b.name === leftover);
      assert.equal(listed?.kind, 'leftover', leftover);
      assert.deepEqual(listed.facts, { dir: leftover, runSh: 'file', metadata: null, error: null });
      assert.ok(!(await store.list()).some((b) => b.name === leftover), 'not among the backends Hangar manages');
      if (restorable) {
        assert.equal(await store.restoreLeftover(leftover), 'demo');
        assert.equal(version(join(backends, 'demo')), 'old');
        assert.deepEqual(readdirSync(backends), ['demo']);
      } else {
        await assert.rejects(store.restoreLeftover(leftover), live ? /"demo" is installed/ : /not a backup/);
        await store.removeLeftover(leftover);
        assert.deepEqual(readdirSync(backends).sort(), live ? ['.hangar', 'demo'] : ['.hangar']);
        if (live) assert.equal(version(join(backends, 'demo')), 'new', 'the live tree is untouched');
      }
    }
  });

  it('refuses to remove or restore what is not a leftover', async (t) => {
    const backends = join(await tempRoot(t), 'backends');
    await writeTree(join(backends, 'demo'), 'new');
    const store = new BackendStore(backends);
    await assert.rejects(store.removeLeftover('demo'), /not a working directory/);
    await assert.rejects(store.removeLeftover('../demo.backup'), /not a working directory/);
    await assert.rejects(store.restoreLeftover('gone.backup'), /not in the backends directory/);
    assert.equal(version(join(backends, 'demo')), 'new');
  });
});
