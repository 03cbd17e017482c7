// The models directory as LocalAI and people leave it: a *.yaml that is a FIFO or a link to a device is passed over
// when a load looks for the model's start limit, rather than waited on or read for ever.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { modelConfigStartLimitMs } from './model-config.ts';

test('a config that is a FIFO or a link to /dev/zero names no limit, and the real config is still found', { timeout: 10_000 }, async (t) => {
  const models = mkdtempSync(join(tmpdir(), 'hangar-models-'));
  t.after(() => rmSync(models, { recursive: true, force: true }));
  execFileSync('mkfifo', [join(models, 'quick.yaml')]);
  symlinkSync('/dev/zero', join(models, 'zero.yaml'));
  writeFileSync(join(models, 'several.yaml'), '- name: quick\n  grpc:\n    attempts: 3\n    attempts_sleep_time: 2\n');
  assert.equal(await modelConfigStartLimitMs(models, 'quick'), 6000);
  assert.equal(await modelConfigStartLimitMs(models, 'unnamed'), null);
});
