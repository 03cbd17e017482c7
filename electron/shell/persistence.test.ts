import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { debouncedWriter, readJson, writeJson } from './json-file.ts';
import { DEFAULT_SETTINGS, settingsSchema } from './settings.ts';
import { DEFAULT_WINDOW_STATE, MIN_SIZE, visibleBounds, windowStateSchema, type WindowState } from './window-state.ts';

const dir = mkdtempSync(join(tmpdir(), 'hangar-shell-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('json files', () => {
  it('round-trips a value and falls back on a missing, corrupt or invalid file', () => {
    const path = join(dir, 'nested', 'settings.json');
    assert.deepEqual(readJson(path, settingsSchema, DEFAULT_SETTINGS), DEFAULT_SETTINGS);
    writeJson(path, { keepBackendsRunning: true, startBackendsOnLaunch: true });
    assert.deepEqual(readJson(path, settingsSchema, DEFAULT_SETTINGS), { keepBackendsRunning: true, startBackendsOnLaunch: true });
    // A settings file from before a setting existed keeps what it says and gets the new setting's default.
    writeJson(path, { keepBackendsRunning: true });
    assert.deepEqual(readJson(path, settingsSchema, DEFAULT_SETTINGS), { keepBackendsRunning: true, startBackendsOnLaunch: false });
    writeFileSync(path, '{"keepBackendsRunning": tru');
    assert.deepEqual(readJson(path, settingsSchema, DEFAULT_SETTINGS), DEFAULT_SETTINGS);
    writeFileSync(path, '{"keepBackendsRunning": "yes"}');
    assert.deepEqual(readJson(path, settingsSchema, DEFAULT_SETTINGS), DEFAULT_SETTINGS);
  });

  it('coalesces scheduled writes and flushes the last one', () => {
    const path = join(dir, 'window-state.json');
    const writer = debouncedWriter<WindowState>(path, 60_000);
    writer.schedule({ maximized: false, bounds: { x: 1, y: 1, width: 800, height: 600 } });
    writer.schedule({ maximized: true, bounds: { x: 2, y: 2, width: 900, height: 700 } });
    assert.equal(existsSync(path), false, 'nothing is written before the delay');
    writer.flush();
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), { maximized: true, bounds: { x: 2, y: 2, width: 900, height: 700 } });
    assert.deepEqual(readJson(path, windowStateSchema, DEFAULT_WINDOW_STATE).maximized, true);
  });

  it('writes after the delay without a flush', async () => {
    const path = join(dir, 'late.json');
    debouncedWriter<object>(path, 20).schedule({ a: 1 });
    const deadline = Date.now() + 5000;
    while (!existsSync(path) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), { a: 1 });
  });
});

describe('window bounds', () => {
  const screen = [{ x: 0, y: 0, width: 1920, height: 1080 }];

  it('keeps bounds that sit on a display, at least the minimum size', () => {
    assert.deepEqual(visibleBounds({ x: 100, y: 100, width: 1000, height: 700 }, screen), { x: 100, y: 100, width: 1000, height: 700 });
    assert.deepEqual(visibleBounds({ x: 0, y: 0, width: 10, height: 10 }, screen), { x: 0, y: 0, ...MIN_SIZE });
  });

  it('drops bounds left on an unplugged monitor', () => {
    assert.equal(visibleBounds({ x: 2500, y: 100, width: 1000, height: 700 }, screen), undefined);
    assert.equal(visibleBounds({ x: 1900, y: 100, width: 1000, height: 700 }, screen), undefined);
    assert.equal(visibleBounds(undefined, screen), undefined);
  });
});
