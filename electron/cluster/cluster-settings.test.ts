import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ClusterJoinRequest } from '../../shared/api.ts';
import { readJson, writeJson } from '../shell/json-file.ts';
import { DEFAULT_DESKTOP_SETTINGS, desktopSettingsSchema } from '../shell/settings.ts';
import { fixedClusterSettings, storedClusterSettings } from './cluster-settings.ts';

test("an agent's cluster is the one it was started with; its secrets are never shown", () => {
  const settings = fixedClusterSettings({ url: 'nats://gw:4222', name: 'n1', user: 'node1', password: 'hunter2' });
  const view = settings.view();
  assert.deepEqual(view.joined, { url: 'nats://gw:4222', name: 'n1', user: 'node1', credsFile: null, caFile: null, insecure: false, hasPassword: true, hasToken: false });
  assert.doesNotMatch(JSON.stringify(view), /hunter2/);
  assert.match(view.fixed ?? '', /started with/);
  assert.throws(() => settings.update(null), /started with/);
  assert.equal(fixedClusterSettings(undefined).view().joined, null);
});

test("the desktop's cluster is kept in its settings file, owner-readable only, for its next start; a secret left out is kept", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'hangar-cluster-settings-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'settings.json');
  let kept: ClusterJoinRequest | null = null;
  const settings = storedClusterSettings(undefined, () => kept, (next) => {
    kept = next;
    writeJson(file, { cluster: next ?? undefined });
  });
  assert.deepEqual(settings.view(), { joined: null, next: null, fixed: null });

  settings.update({ url: 'tls://gw:4222', name: 'desk', password: 'hunter2', caFile: '/etc/ca.pem' });
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(readJson(file, desktopSettingsSchema, DEFAULT_DESKTOP_SETTINGS).cluster?.password, 'hunter2');

  const renamed = settings.update({ url: 'tls://gw:4222', name: 'desk-2' });
  assert.equal(renamed.next?.name, 'desk-2');
  assert.equal(renamed.next?.hasPassword, true, 'a password left out is kept');
  assert.doesNotMatch(JSON.stringify(renamed), /hunter2/);
  assert.equal(settings.update({ url: 'tls://gw:4222', password: '' }).next?.hasPassword, false, 'an empty one is removed');
  assert.equal(settings.update(null).next, null);
  assert.equal(readJson(file, desktopSettingsSchema, DEFAULT_DESKTOP_SETTINGS).cluster, undefined);
});
