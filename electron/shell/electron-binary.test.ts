import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { findElectronBinary } from './electron-binary.ts';

const dir = mkdtempSync(join(tmpdir(), 'hangar-electron-bin-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('electron binary', () => {
  it('says why there is none without trying to download one', () => {
    const saved = process.env.ELECTRON_OVERRIDE_DIST_PATH;
    delete process.env.ELECTRON_OVERRIDE_DIST_PATH;
    try {
      const found = findElectronBinary();
      if ('missing' in found) assert.match(found.missing, /electron/i);
      else assert.ok(found.path.length > 0);
      assert.deepEqual(findElectronBinary(join(dir, 'x.js')), { missing: 'the electron package is not installed' });
    } finally {
      if (saved !== undefined) process.env.ELECTRON_OVERRIDE_DIST_PATH = saved;
    }
  });

  it('honours ELECTRON_OVERRIDE_DIST_PATH like the electron package does', () => {
    const saved = process.env.ELECTRON_OVERRIDE_DIST_PATH;
    process.env.ELECTRON_OVERRIDE_DIST_PATH = dir;
    try {
      const found = findElectronBinary();
      const expected = 'missing' in found ? found.expected : undefined;
      assert.ok(expected && expected.startsWith(dir), JSON.stringify(found));
      mkdirSync(dirname(expected), { recursive: true });
      writeFileSync(expected, '#!/bin/sh\n');
      chmodSync(expected, 0o755);
      assert.deepEqual(findElectronBinary(), { path: expected });
    } finally {
      if (saved === undefined) delete process.env.ELECTRON_OVERRIDE_DIST_PATH;
      else process.env.ELECTRON_OVERRIDE_DIST_PATH = saved;
    }
  });
});
