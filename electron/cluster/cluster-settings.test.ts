import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readJson, writeJson } from '../shell/json-file.ts';
import { DEFAULT_DESKTOP_SETTINGS, desktopSettingsSchema } from '../shell/settings.ts';
import { fixedClusterSettings, storedClusterSettings } from './cluster-settings.ts';

test("an agent's cluster is the one it was started with; its secrets are never shown", async () => {
  const settings = fixedClusterSettings({ url: 'nats://gw:4222', name: 'n1', user: 'node1', password: 'hunter2' });
  const view = settings.view();
  assert.deepEqual(view.joined, { url: 'nats://gw:4222', name: 'n1', user: 'node1', credsFile: null, caFile: null, insecure: false, hasPassword: true, hasToken: false });
  assert.doesNotMatch(JSON.stringify(view), /hunter2/);
  assert.match(view.fixed ?? '', /started with/);
  await assert.rejects(settings.update(null), /started with/);
  assert.equal(fixedClusterSettings(undefined).view().joined, null);
});

test("the desktop's cluster is kept in its settings file, owner-readable only, for its next start; a secret left out is kept", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'hangar-cluster-settings-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'settings.json');
  const settings = await storedClusterSettings(undefined, {
    read: async () => readJson(file, desktopSettingsSchema, DEFAULT_DESKTOP_SETTINGS).cluster ?? null,
    write: async (next) => writeJson(file, { cluster: next ?? undefined }),
  });
  assert.deepEqual(settings.view(), { joined: null, next: null, fixed: null });

  await settings.update({ url: 'tls://gw:4222', name: 'desk', password: 'hunter2', caFile: '/etc/ca.pem' });
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(readJson(file, desktopSettingsSchema, DEFAULT_DESKTOP_SETTINGS).cluster?.password, 'hunter2');

  const renamed = await settings.update({ url: 'tls://gw:4222', name: 'desk-2' });
  assert.equal(renamed.next?.name, 'desk-2');
  assert.equal(renamed.next?.hasPassword, true, 'a password left out is kept');
  assert.doesNotMatch(JSON.stringify(renamed), /hunter2/);
  assert.equal((await settings.update({ url: 'tls://gw:4222', password: '' })).next?.hasPassword, false, 'an empty one is removed');
  assert.equal((await settings.update(null)).next, null);
  assert.equal(readJson(file, desktopSettingsSchema, DEFAULT_DESKTOP_SETTINGS).cluster, undefined);
});

test('a change the settings file cannot take is refused, and the setting stays as it was', async () => {
  let writes = 0;
  const settings = await storedClusterSettings(undefined, {
    read: async () => ({ url: 'nats://gw:4222', name: 'desk', password: 'hunter2' }),
    write: async () => {
      writes++;
      throw new Error('ENOSPC: no space left on device');
    },
  });
  await assert.rejects(settings.update({ url: 'nats://other:4222' }), (error: Error & { code?: string }) => error.code === 'failed' && /ENOSPC/.test(error.message));
  assert.equal(writes, 1);
  assert.deepEqual(settings.view().next, { url: 'nats://gw:4222', name: 'desk', user: null, credsFile: null, caFile: null, insecure: false, hasPassword: true, hasToken: false });
});
