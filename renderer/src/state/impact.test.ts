import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BackendInfo } from './backends.ts';
import type { BackendView, ProcessView, RolloutView } from '../../../shared/types.ts';
import { alsoTouched, impactOf, leftoverImpact, pinImpact, rollbackImpact, rolloutImpact, upgradeAllImpact } from './impact.ts';
import { emptyBackends } from './backends.ts';

const echo: BackendInfo = {
  name: 'echo', kind: 'backend', runs: 'echo', localai: [], leftover: null, kept: null, alias: null, version: '1.0.0', digest: null, sha256: null, uri: null, gallery: null, dir: '/b/echo',
  installedAt: null, metaBackendFor: null, upgradable: true, availableVersion: '1.1.0', previous: { version: '1.0.1', installedAt: null }, broken: null,
};

test('an upgrade names the processes it restarts and the rollback target it replaces', () => {
  const impact = impactOf('upgrade', echo, ['m1', 'm2']);
  assert.equal(impact.title, 'Upgrade echo?');
  assert.deepEqual(impact.lines, [
    'Installs echo 1.1.0 in place of 1.0.0.',
    'Will restart 2 processes (m1, m2).',
    'Will replace the rollback target 1.0.1 with 1.0.0.',
  ]);
});

test('an upgrade to a new build of the same version says so, not "1.0.0 → 1.0.0"', () => {
  const rebuilt = { ...echo, availableVersion: '1.0.0' };
  assert.equal(impactOf('upgrade', rebuilt, []).lines[0], "Installs a new build of echo 1.0.0 (the gallery's image changed) in place of the one installed.");
  assert.deepEqual(upgradeAllImpact([rebuilt], {}).lines[0], 'Upgrades echo 1.0.0 → new build.');
});

test('a reinstall of the same version keeps the rollback target', () => {
  const impact = impactOf('reinstall', { ...echo, upgradable: false, availableVersion: null }, ['m1']);
  assert.deepEqual(impact.lines.slice(1), ['Will restart 1 process (m1).', 'The rollback target 1.0.1 is kept.']);
});

test('a swap says that a process running from a directory replaced outside Hangar starts again from the new tree', () => {
  const impact = impactOf('reinstall', { ...echo, upgradable: false, availableVersion: null }, ['m1', 'm2'], false, { stale: ['m2'] });
  assert.deepEqual(impact.lines.slice(1, 3), [
    'Will restart 2 processes (m1, m2).',
    'm2 runs from a directory replaced outside Hangar, and starts again from the tree swapped in.',
  ]);
});

test('deleting a build names the metas that point at it, which go with it', () => {
  const auto = { ...echo, name: 'echo-auto', metaBackendFor: 'echo', previous: null };
  const state = { ...emptyBackends, names: ['echo', 'echo-auto'], byName: { echo, 'echo-auto': auto }, modelsByBackend: { echo: ['m1', 'm2'] }, processes: { m1: { cwd: 'ok' }, m2: { cwd: 'stale' } } as unknown as typeof emptyBackends.processes };
  const also = alsoTouched(state, 'echo');
  assert.deepEqual(also, { stale: ['m2'], metas: ['echo-auto'] });
  assert.deepEqual(impactOf('delete', echo, ['m1', 'm2'], false, also).lines, [
    'Will stop 2 processes (m1, m2).',
    'Removes echo 1.0.0 and its rollback target 1.0.1, and the meta echo-auto that points at it (as LocalAI does). This cannot be undone.',
  ]);
});

test('a rollback and a delete say what they swap and remove', () => {
  assert.deepEqual(impactOf('rollback', echo, []).lines, [
    'Swaps 1.0.1 back in for 1.0.0.',
    'No process is running, so nothing is restarted.',
    '1.0.0 becomes the rollback target, so you can swap forward again.',
  ]);
  const gone = impactOf('delete', { ...echo, metaBackendFor: 'cpu-echo' }, ['m1']);
  assert.equal(gone.danger, true);
  assert.deepEqual(gone.lines, [
    'Will stop 1 process (m1).',
    'Removes echo 1.0.0 and its rollback target 1.0.1, and its build cpu-echo (as LocalAI does). This cannot be undone.',
  ]);
});

test('upgrade all lists every upgradable backend and every process it restarts', () => {
  const py: BackendInfo = { ...echo, name: 'py', version: '1', availableVersion: '2', previous: null };
  const done: BackendInfo = { ...echo, name: 'done', upgradable: false };
  const impact = upgradeAllImpact([echo, done, py], { echo: ['m1'], done: ['m9'], py: ['m2', 'm3'] });
  assert.equal(impact.title, 'Upgrade 2 backends?');
  assert.deepEqual(impact.lines.slice(0, 2), ['Upgrades echo 1.0.0 → 1.1.0, py 1 → 2.', 'Will restart 3 processes (m1, m2, m3).']);
});

test('what LocalAI left behind: a restore renames it back, a delete removes only it; a kept copy says its size', () => {
  const backup: BackendInfo = { ...echo, name: 'echo.install-backup', kind: 'leftover', runs: 'echo.install-backup', leftover: { of: 'echo', suffix: '.install-backup', restorable: true } };
  const restore = leftoverImpact('restore', backup);
  assert.equal(restore.title, 'Restore echo from echo.install-backup?');
  assert.equal(restore.danger, false);
  assert.match(restore.lines[0]!, /^Renames echo\.install-backup back to echo/);
  const remove = leftoverImpact('delete', backup);
  assert.equal(remove.danger, true);
  assert.deepEqual(remove.lines, ['Removes echo.install-backup, which LocalAI left behind; echo itself is not touched. This cannot be undone.']);
  const kept = impactOf('delete', { ...echo, kind: 'kept', runs: null, previous: null, kept: { since: '', expiresAt: '', bytes: 3 * 1024 * 1024 } }, []);
  assert.equal(kept.title, 'Delete the kept copy of echo?');
  assert.deepEqual(kept.lines, ['Removes echo 1.0.0 (3.0 MiB), kept from a backend that was deleted outside Hangar. This cannot be undone.']);
});

test('a rolling upgrade names each node with its version change and restarts (a LocalAI worker\'s stops), the ones left alone or passed by (cordoned) and why, and the halt rule', () => {
  const backend = (patch: Partial<BackendView>): BackendView => ({ ...echo, processes: [], ...patch });
  const m1 = { model: 'm1' } as ProcessView;
  const impact = rolloutImpact('echo', [
    { id: 'a', label: 'n1', offline: false, untrusted: false, backends: [backend({ processes: [m1] })] },
    { id: 'b', label: 'n2', offline: false, untrusted: false, backends: [backend({ upgradable: false, availableVersion: null })] },
    { id: 'c', label: 'n3', offline: false, untrusted: false, backends: [] },
    { id: 'e', label: 'n5', offline: false, untrusted: true, backends: null },
    { id: 'd', label: 'n4', offline: true, untrusted: false, backends: [backend({})] },
    { id: 'w', label: 'w1', offline: false, untrusted: false, backends: [backend({ processes: [m1] })], worker: true },
    { id: 'f', label: 'n6', offline: false, untrusted: false, backends: [backend({})], cordoned: true },
  ]);
  assert.equal(impact.title, 'Upgrade echo on 2 nodes?');
  assert.deepEqual(impact.lines, [
    'n1: 1.0.0 → 1.1.0, restarts m1.',
    'n2: already 1.0.0, left alone.',
    'n3: echo is not installed, left alone.',
    'n5: does not trust this host, passed by.',
    'n4: offline, passed by.',
    // A LocalAI worker's upgrade starts nothing again.
    "w1: 1.0.0 → 1.1.0, stops m1 (LocalAI's frontend starts it again on the next request).",
    'n6: cordoned, passed by.',
  ]);
  assert.match(impact.rule!, /stops at the first node that fails/);
});

test("rolling back a rollout goes back on each node it upgraded, with that node's restarts", () => {
  const rollout: RolloutView = {
    id: 'r1', backend: 'echo', version: '1.1.0', on: 'all', maxParallel: 1, state: 'halted', startedAt: '', finishedAt: '', coordinator: { id: 'local', name: 'this host' }, interrupted: null,
    nodes: [
      { id: 'a', name: 'n1', step: 'upgraded', reason: null, from: '1.0.0', to: '1.1.0' },
      { id: 'b', name: 'n2', step: 'failed', reason: 'sha256 mismatch', from: '1.0.0', to: '1.1.0' },
    ],
  };
  const impact = rollbackImpact(rollout, [{ id: 'a', label: 'n1', offline: false, untrusted: false, backends: [{ ...echo, processes: [{ model: 'm1' } as ProcessView] }] }]);
  assert.equal(impact.title, 'Roll back the rollout of echo on 1 node?');
  assert.deepEqual(impact.lines, ['n1: 1.1.0 → 1.0.0, restarts m1.']);
});

test('rolling back a rollout names the node its desired version moved after it passed it by, and only that one', () => {
  const rollout: RolloutView = {
    id: 'r1', backend: 'echo', version: '1.1.0', on: 'all', maxParallel: 1, state: 'done', startedAt: '', finishedAt: '', coordinator: { id: 'local', name: 'this host' }, interrupted: null,
    nodes: [
      { id: 'a', name: 'n1', step: 'upgraded', reason: null, from: '1.0.0', to: '1.1.0' },
      { id: 'b', name: 'n2', step: 'skipped', reason: 'cordoned', from: null, to: null },
      { id: 'c', name: 'n3', step: 'skipped', reason: 'cordoned', from: null, to: null },
    ],
  };
  const said = (node: string, rollout: string, version: string) => ({ node, backend: 'echo', wanted: '1.1.0', version, state: 'converged' as const, reason: null, tries: 0, at: '', movedBy: { rollout, from: '1.0.0' } });
  const sides = ['n1', 'n2', 'n3', 'n4'].map((label, i) => ({ id: 'abcd'[i]!, label, offline: false, untrusted: false, backends: [] }));
  // n3 was moved by another rollout; n4 joined later and was moved by this one.
  const impact = rollbackImpact(rollout, sides, [said('b', 'r1', '1.1.0'), said('c', 'r0', '1.1.0'), said('d', 'r1', '1.1.0')]);
  assert.equal(impact.title, 'Roll back the rollout of echo on 3 nodes?');
  assert.deepEqual(impact.lines, [
    'n1: 1.1.0 → 1.0.0, no process to restart.',
    'n2: 1.1.0 → 1.0.0 (converged to 1.1.0 by itself after the rollout passed it by), no process to restart.',
    'n4: 1.1.0 → 1.0.0 (converged to 1.1.0 by itself after the rollout passed it by), no process to restart.',
  ]);
});

test('a pin or a rollout says a revoked node never comes back to follow, where an offline one does', () => {
  const sides = [
    { id: 'a', label: 'n1', offline: true, untrusted: false, backends: null },
    { id: 'b', label: 'n2', offline: true, untrusted: false, revoked: true, backends: null },
  ];
  assert.deepEqual(pinImpact('echo', '2.0.0', sides).lines, ['n1: away; it follows when it is back.', 'n2: revoked from the cluster; it cannot come back to follow.']);
  assert.deepEqual(rolloutImpact('echo', sides).lines, ['n1: offline, passed by.', 'n2: revoked from the cluster, passed by.']);
});
