// The LocalAI cluster a host manages, as Settings set it: kept owner-only and whole, its secrets never shown back,
// applied at once, and a frontend that cannot be reached said, not thrown.
import assert from 'node:assert/strict';
import { readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { NodeEvent } from '../../shared/types.ts';
import { until } from '../agent/test-agent.ts';
import { startNats, type NatsServer } from '../cluster/test-nats.ts';
import { tempDir } from '../core/testing/fixtures.ts';
import { LOCALAI_FILE, LocalAiConnection } from './connection.ts';
import { startGalleryServer, type GalleryServer } from './testing/gallery-server.ts';
import { startStandInFrontend, type StandInFrontend } from './testing/standin-frontend.ts';
import { StandInWorker } from './testing/standin-worker.ts';

const API_KEY = 'admin-key-0123456789';
const TOKEN = 'registration-token-0123456789';
const noHangar = { cards: async () => [], info: async () => ({ addresses: [] }), backends: async () => [] };

describe('Settings → LocalAI cluster', () => {
  let root: string;
  let nats: NatsServer;
  let gallery: GalleryServer;
  let frontend: StandInFrontend;
  let worker: StandInWorker;

  before(async () => {
    root = await tempDir('localai-connection');
    nats = await startNats();
    gallery = await startGalleryServer([]);
    frontend = await startStandInFrontend({ apiKey: API_KEY, registrationToken: TOKEN, galleries: [{ url: gallery.indexUrl, name: 'g' }] });
    worker = new StandInWorker({ name: 'gpu1', nats: nats.url, frontend: frontend.url, registrationToken: TOKEN, backendsDir: join(root, 'gpu1'), basePort: 25400 });
    await worker.start();
  });

  after(async () => {
    await worker?.stop();
    await frontend?.close();
    await gallery?.close();
    await nats?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('a change is kept owner-only, applied at once, and read back without its secrets', async () => {
    const stateDir = join(root, 'state');
    const connection = new LocalAiConnection({ stateDir, fixed: null, hangar: noHangar, pollMs: 200 });
    const events: NodeEvent[] = [];
    connection.on('event', (e) => events.push(e));
    await connection.start();
    assert.equal(connection.view().localai, null);

    const view = await connection.update({ frontend: frontend.url, apiKey: API_KEY, nats: nats.url, natsPassword: 'nats-secret-1' });
    assert.deepEqual(view.status && { connected: view.status.connected, workers: view.status.workers }, { connected: true, workers: 1 });
    assert.equal(view.localai?.hasApiKey, true);
    assert.equal(view.localai?.hasNatsPassword, true);
    assert.doesNotMatch(JSON.stringify(view), /admin-key|nats-secret/);
    assert.ok(events.some((e) => e.type === 'member' && e.member.name === 'gpu1'));
    const file = join(stateDir, LOCALAI_FILE);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal(JSON.parse(await readFile(file, 'utf8')).apiKey, API_KEY);

    // A secret left out is kept; an empty one is removed.
    await connection.update({ frontend: frontend.url, nats: nats.url, natsPassword: '' });
    const kept = JSON.parse(await readFile(file, 'utf8'));
    assert.equal(kept.apiKey, API_KEY);
    assert.equal(kept.natsPassword, undefined);
    await connection.close();

    // The next start reads it again.
    const again = new LocalAiConnection({ stateDir, fixed: null, hangar: noHangar, pollMs: 200 });
    await again.start();
    assert.equal(again.view().status?.connected, true);
    await again.close();
  });

  test('a wrong API key, or no frontend there, is said in the status and once in the log, and nothing throws', async () => {
    const logged: string[] = [];
    const connection = new LocalAiConnection({ stateDir: join(root, 'state-bad'), fixed: null, hangar: noHangar, pollMs: 200, retryMs: 100, log: (line) => logged.push(line) });
    await connection.start();
    const wrongKey = await connection.update({ frontend: frontend.url, apiKey: 'not-the-key-000000', nats: nats.url });
    assert.equal(wrongKey.status?.connected, false);
    assert.match(wrongKey.status?.reason ?? '', /refused the API key \(401\)/);
    assert.doesNotMatch(JSON.stringify(wrongKey), /not-the-key/);
    const noNats = await connection.update({ frontend: frontend.url, apiKey: API_KEY, nats: 'nats://127.0.0.1:1' });
    assert.match(noNats.status?.reason ?? '', /cannot join the cluster at nats:\/\/127\.0\.0\.1:1/);
    await until('still retrying, still said', async () => (connection.view().status?.reason ? true : undefined), 1000);
    // Retried every 100 ms, each reason is said once.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(logged.length, 2, logged.join('\n'));
    assert.match(logged[0]!, new RegExp(`^LocalAI cluster ${frontend.url.replace(/[.]/g, '\\.')}: .*refused the API key \\(401\\).*; asked again every 0\\.2 s$`));
    assert.match(logged[1]!, /cannot join the cluster at nats:\/\/127\.0\.0\.1:1.*; retrying every 0\.1 s$/);
    await connection.close();
  });

  test('set on the command line, it is fixed for the run', async () => {
    const connection = new LocalAiConnection({ stateDir: join(root, 'state-fixed'), fixed: { frontend: frontend.url, apiKey: API_KEY, nats: nats.url }, hangar: noHangar });
    await connection.start();
    assert.match(connection.view().fixed ?? '', /started with \(--localai-frontend\)/);
    await assert.rejects(connection.update(null), /takes a restart of the agent/);
    await connection.close();
  });
});
