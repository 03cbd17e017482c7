import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import type { LocalAiRunView } from '../../shared/types.ts';
import { followTray, trayMenu, trayState, type TrayActions, type TrayState } from './localai-tray.ts';

const URL = 'http://127.0.0.1:41234';

function view(state: LocalAiRunView['state'], more: Partial<LocalAiRunView> = {}): LocalAiRunView {
  return {
    state,
    pid: state === 'ready' || state === 'starting' ? 4242 : null,
    version: state === 'not-installed' ? null : 'v3.3.0',
    previousVersion: null,
    url: state === 'ready' || state === 'starting' ? URL : null,
    binary: state === 'not-installed' ? null : '/home/me/hangar/localai/local-ai-v3.3.0',
    fixedBinary: false,
    modelsPath: '/home/me/hangar/models',
    backendsPath: '/home/me/hangar/backends',
    processes: 0,
    restarts: 0,
    lastExit: null,
    link: null,
    operation: null,
    failedStart: null,
    refused: [],
    marked: [],
    ...more,
  };
}

test("the tray says LocalAI's state, and enables Start, Stop and Open only where they can act", () => {
  const table: Array<[LocalAiRunView['state'], string, string, [boolean, boolean, boolean]]> = [
    ['not-installed', 'LocalAI: not installed (Settings → LocalAI)', '', [false, false, false]],
    ['stopped', 'LocalAI v3.3.0: stopped', '', [true, false, false]],
    ['starting', 'LocalAI v3.3.0: starting…', 'LocalAI starting…', [false, true, false]],
    ['ready', 'LocalAI v3.3.0: ready', '', [false, true, true]],
    ['stopping', 'LocalAI v3.3.0: stopping…', 'LocalAI stopping…', [false, false, false]],
    ['crashed', 'LocalAI v3.3.0: crashed, restarting', 'LocalAI crashed, restarting', [true, true, false]],
    ['crash-looping', 'LocalAI v3.3.0: crash-looping, left stopped', 'LocalAI crash-looping, left stopped', [true, false, false]],
  ];
  for (const [state, status, title, [start, stop, open]] of table) {
    const tray = trayState(view(state));
    assert.equal(tray.status, status, state);
    assert.equal(tray.title, title, state);
    assert.deepEqual(tray.enabled, { start, stop, open }, state);
    assert.equal(tray.tooltip, state === 'ready' ? `Hangar\n${status}\nat ${URL}` : `Hangar\n${status}`, state);
  }
});

test('an upgrade under way is said, and neither Start nor Stop is offered while it runs; marked backends are counted', () => {
  const operation = { kind: 'upgrade' as const, state: 'running' as const, phase: 'downloading LocalAI v3.4.0: 40%', cancellable: true, message: null, logTail: [], startedAt: '2026-12-06T05:00:00Z', finishedAt: null };
  const marked = [
    { name: 'echo', why: 'new build', since: 'v3.3.0' },
    { name: 'whisper', why: '1.0.0 → 1.1.0', since: 'v3.3.0' },
  ];
  const tray = trayState(view('ready', { operation, marked }));
  assert.equal(tray.status, 'LocalAI v3.3.0: upgrade: downloading LocalAI v3.4.0: 40%');
  assert.equal(tray.title, 'LocalAI upgrade…');
  assert.deepEqual(tray.enabled, { start: false, stop: false, open: true });
  assert.equal(tray.tooltip, `Hangar\nLocalAI v3.3.0: upgrade: downloading LocalAI v3.4.0: 40%\nat ${URL}\n2 backends to upgrade (Settings → LocalAI)`);
});

test("the tray's menu: its state, the app menu's LocalAI controls, Open Hangar and Quit, each doing what it says", () => {
  const done: string[] = [];
  const actions: TrayActions = {
    view: () => view('ready'),
    start: () => done.push('start'),
    stop: () => done.push('stop'),
    open: (url) => done.push(`open ${url}`),
    showWindow: () => done.push('window'),
    quit: () => done.push('quit'),
  };
  const menu = trayMenu(trayState(view('ready')), actions);
  assert.deepEqual(
    menu.map((e) => [e.label ?? e.type, e.enabled ?? true]),
    [
      ['LocalAI v3.3.0: ready', false],
      ['Start LocalAI', false],
      ['Stop LocalAI', true],
      ["Open LocalAI's Web UI", true],
      ['separator', true],
      ['Open Hangar', true],
      ['Quit Hangar', true],
    ],
  );
  for (const entry of menu) entry.click?.({ checked: false });
  assert.deepEqual(done, ['start', 'stop', `open ${URL}`, 'window', 'quit']);
});

test('followTray shows the state at once, then again only when it changed, until stopped', async () => {
  let current = view('stopped');
  const shown: TrayState[] = [];
  const stop = followTray(() => current, (state) => shown.push(state), 10);
  assert.deepEqual(shown.map((s) => s.status), ['LocalAI v3.3.0: stopped']);
  await sleep(50);
  assert.equal(shown.length, 1, 'the same state is not shown again');
  current = view('ready');
  await sleep(50);
  assert.deepEqual(shown.map((s) => s.status), ['LocalAI v3.3.0: stopped', 'LocalAI v3.3.0: ready']);
  stop();
  current = view('stopping');
  await sleep(50);
  assert.equal(shown.length, 2, 'nothing is shown once stopped');
});
