import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { STATE_WARNING } from '../core/state-file.ts';
import { tmpfsForTest } from '../core/testing/tmpfs.ts';
import { debouncedWriter, readJson, writeJson } from './json-file.ts';
import * as z from 'zod';
import { DEFAULT_WINDOW_STATE, MIN_SIZE, visibleBounds, windowStateSchema, type WindowState } from './window-state.ts';

const dir = mkdtempSync(join(tmpdir(), 'hangar-shell-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const flagSchema = z.object({ keepBackendsRunning: z.boolean() });
const DEFAULT_FLAG = { keepBackendsRunning: false };

describe('json files', () => {
  it('round-trips a value and falls back on a missing, corrupt or invalid file', () => {
    const path = join(dir, 'nested', 'settings.json');
    assert.deepEqual(readJson(path, flagSchema, DEFAULT_FLAG), DEFAULT_FLAG);
    writeJson(path, { keepBackendsRunning: true });
    assert.deepEqual(readJson(path, flagSchema, DEFAULT_FLAG), { keepBackendsRunning: true });
    writeFileSync(path, '{"keepBackendsRunning": tru');
    assert.deepEqual(readJson(path, flagSchema, DEFAULT_FLAG), DEFAULT_FLAG);
    writeFileSync(path, '{"keepBackendsRunning": "yes"}');
    assert.deepEqual(readJson(path, flagSchema, DEFAULT_FLAG), DEFAULT_FLAG);
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

describe('json files on a full disk', () => {
  it("the desktop's settings: a write that does not fit throws, names the file, and leaves the old one whole", async (t) => {
    const mounted = await tmpfsForTest(t, '1m');
    if (!mounted) return;
    const path = join(mounted.dir, 'settings.json');
    writeJson(path, { keepBackendsRunning: true });
    await mounted.disk.fill();
    assert.throws(() => writeJson(path, { keepBackendsRunning: false }), { message: `cannot write ${path}: no space left on device` });
    assert.deepEqual(readJson(path, flagSchema, DEFAULT_FLAG), { keepBackendsRunning: true });
    assert.deepEqual(readdirSync(mounted.dir).sort(), ['filler', 'settings.json']);
  });

  it("the window's place: a write that does not fit is said once and never thrown, from its timer or on quit", async (t) => {
    const mounted = await tmpfsForTest(t, '1m');
    if (!mounted) return;
    const warnings: string[] = [];
    const listen = (warning: Error) => warning.name === STATE_WARNING && warnings.push(warning.message);
    process.on('warning', listen);
    t.after(() => process.off('warning', listen));
    await mounted.disk.fill();
    const writer = debouncedWriter<object>(join(mounted.dir, 'window-state.json'), 10);
    writer.schedule({ a: 1 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    writer.schedule({ a: 2 });
    writer.flush();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0]!, /window-state\.json: no space left on device/);
    assert.deepEqual(readdirSync(mounted.dir), ['filler']);
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
