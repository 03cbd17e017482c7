// LocalAI workers as Hangar nodes, against stand-ins written from LocalAI's code: a frontend's node registry over HTTP,
// workers on a real nats-server answering LocalAI's subjects, a gallery over HTTP. Each worker downloads, writes its
// backends directory and runs real processes.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { BackendView, JobView, NodeCard, NodeEvent, ProcessView } from '../../shared/types.ts';
import { HangarError } from '../../shared/errors.ts';
import { startNats, type NatsServer } from '../cluster/test-nats.ts';
import { tempDir } from '../core/testing/fixtures.ts';
import { until } from '../agent/test-agent.ts';
import { BackendClient } from '../core/supervisor/grpc-client.ts';
import { portAnswers } from '../core/supervisor/readiness.ts';
import { joinLocalAi } from './join.ts';
import type { LocalAiLink } from './workers-link.ts';
import { workerSubjects } from './protocol.ts';
import { startGalleryServer, type GalleryServer } from './testing/gallery-server.ts';
import { startStandInFrontend, type StandInFrontend } from './testing/standin-frontend.ts';
import { StandInWorker } from './testing/standin-worker.ts';

const API_KEY = 'admin-key-0123456789';
const TOKEN = 'registration-token-0123456789';
const ARTIFACT_BYTES = 512 * 1024;

describe('LocalAI workers as Hangar nodes', () => {
  let root: string;
  let nats: NatsServer;
  let gallery: GalleryServer;
  let frontend: StandInFrontend;
  let link: LocalAiLink;
  let nc: NatsConnection;
  const workers: Record<string, StandInWorker> = {};
  const events: NodeEvent[] = [];

  const card = (name: string) => link.cards().find((c) => c.name === name)!;
  const call = <T>(name: string, method: Parameters<LocalAiLink['call']>[0], extra: Record<string, unknown> = {}) =>
    link.call(method, { node: card(name).id, ...extra }) as Promise<T>;
  const finished = (name: string, job: JobView) => call<JobView>(name, 'waitJob', { id: job.id });
  const backend = async (name: string, backendName: string) => (await call<BackendView[]>(name, 'backends')).find((b) => b.name === backendName);
  /** What LocalAI's frontend does to load a model on a worker: backend.install with the model's id. */
  const frontendLoads = async (worker: StandInWorker, backendName: string, model: string) => {
    const reply = await nc.request(workerSubjects.install(worker.id), JSON.stringify({ backend: backendName, model_id: model }), { timeout: 5000 });
    assert.equal(reply.json<{ success: boolean }>().success, true);
  };
  /** A gRPC client to a worker's backend process on this machine, closed after `use`. */
  const withBackend = async (port: number, use: (client: BackendClient) => Promise<void>) => {
    const client = new BackendClient(`127.0.0.1:${port}`);
    try {
      await use(client);
    } finally {
      client.close();
    }
  };
  const startWorker = async (name: string, options: Partial<ConstructorParameters<typeof StandInWorker>[0]> = {}) => {
    workers[name] = new StandInWorker({
      name,
      nats: nats.url,
      frontend: frontend.url,
      registrationToken: TOKEN,
      backendsDir: join(root, name, 'backends'),
      capability: 'default',
      heartbeatMs: 200,
      indexCacheMs: 0,
      // Each worker's backends take ports upward from a base of their own, as a LocalAI worker's do from its base port.
      basePort: 25200 + 20 * Object.keys(workers).length,
      ...options,
    });
    await workers[name].start();
  };

  before(async () => {
    root = await tempDir('localai-workers');
    nats = await startNats();
    gallery = await startGalleryServer([{ name: 'echo', version: '1.0.0', bytes: ARTIFACT_BYTES }], { chunkDelayMs: 25 });
    frontend = await startStandInFrontend({
      apiKey: API_KEY,
      registrationToken: TOKEN,
      galleries: [{ url: gallery.indexUrl, name: 'test' }],
      staleMs: 1500,
      checkMs: 100,
      pending: ['gpu-new'],
    });
    await startWorker('gpu-a', { gpuVendor: 'nvidia', totalVram: 24 * 1024 ** 3, capability: 'nvidia' });
    // A worker from before backend.upgrade existed.
    await startWorker('gpu-b', { upgradeHandler: false });
    // A worker that keeps its gallery index for an hour, as LocalAI does.
    await startWorker('gpu-c', { indexCacheMs: 60 * 60_000 });
    nc = await connect({ servers: nats.url.replace('nats://', '') });
    link = await joinLocalAi({ frontend: frontend.url, apiKey: API_KEY, nats: nats.url }, { pollMs: 200, reloadWaitMs: 1500 });
    link.on('event', (e) => events.push(e));
  });

  after(async () => {
    await link?.close();
    await nc?.close();
    for (const worker of Object.values(workers)) await worker.stop();
    await frontend?.close();
    await gallery?.close();
    await nats?.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('the frontend lists its workers; each is a node of its own kind with what LocalAI says of it', async () => {
    const cards = link.cards().sort((a, b) => a.name.localeCompare(b.name));
    assert.deepEqual(cards.map((c) => [c.name, c.kind, c.status]), [['gpu-a', 'localai-worker', 'online'], ['gpu-b', 'localai-worker', 'online'], ['gpu-c', 'localai-worker', 'online']]);
    const a = card('gpu-a');
    assert.equal(a.id, `localai-${workers['gpu-a']!.id}`);
    assert.equal(a.capability, 'nvidia');
    assert.equal(a.localai?.status, 'healthy');
    assert.equal(a.localai?.gpuVendor, 'nvidia');
    assert.equal(a.localai?.totalVramBytes, 24 * 1024 ** 3);
    assert.equal(a.localai?.address, '127.0.0.1:25200');
    assert.deepEqual(a.labels, { 'node.replica-slots': '1', 'gpu.vendor': 'nvidia' });
    // An empty backend list is `{"backends":null}`, an empty model list `{"models":[]}`.
    assert.deepEqual(await call('gpu-a', 'backends'), []);
    assert.deepEqual(await call('gpu-a', 'processes'), []);
    assert.deepEqual(a.counts, { backends: 0, processes: 0, stale: 0, upgradable: 0, drift: 0 });
    // Hangar only reads the frontend, with the admin's key.
    assert.ok(frontend.requests.every((r) => r.method === 'GET' || r.path.startsWith('/api/node/')));
    assert.ok(frontend.requests.filter((r) => r.path.startsWith('/api/nodes') || r.path === '/backends/galleries').every((r) => r.authorized));
  });

  test('install streams the worker\'s progress; the last event, sent just before the reply, is not lost', async () => {
    const before = events.length;
    const job = await call<JobView>('gpu-a', 'install', { name: 'echo' });
    const done = await finished('gpu-a', job);
    assert.equal(done.state, 'done', done.error ?? '');
    assert.equal(done.phase, 'installed 1.0.0');
    const progress = events.slice(before).flatMap((e) => (e.type === 'job' && e.job.id === job.id && e.job.totalBytes !== null ? [e.job] : []));
    assert.ok(progress.length >= 2, `progress events: ${progress.length}`);
    assert.equal(progress.at(-1)!.totalBytes, ARTIFACT_BYTES);
    assert.equal(progress.at(-1)!.bytes, ARTIFACT_BYTES, 'the final 100% event arrived before the job ended');
    const sent = workers['gpu-a']!.received.find((r) => r.subject === 'backend.install')!.body as Record<string, unknown>;
    assert.equal(sent.backend, 'echo');
    assert.match(String(sent.op_id), /^[0-9a-f-]{36}$/);
    // The galleries go as the frontend's own JSON text.
    assert.deepEqual(JSON.parse(String(sent.backend_galleries)), [{ url: gallery.indexUrl, name: 'test' }]);
    const echo = await backend('gpu-a', 'echo');
    assert.equal(echo?.version, '1.0.0');
    assert.equal(echo?.upgradable, false);
    // LocalAI's backend.install starts the backend's process, a gRPC server that answers at the port it reports.
    const processes = await call<ProcessView[]>('gpu-a', 'processes');
    assert.deepEqual(processes.map((p) => p.model), ['echo']);
    await withBackend(processes[0]!.port, async (client) => assert.equal(await client.health(2000), 'OK'));
  });

  test('installed on the others; a newer gallery version is upgradable, and the card counts it', async () => {
    for (const name of ['gpu-b', 'gpu-c']) assert.equal((await finished(name, await call<JobView>(name, 'install', { name: 'echo' }))).state, 'done');
    gallery.publish([{ name: 'echo', version: '2.0.0', bytes: ARTIFACT_BYTES }]);
    await link.galleries.refresh();
    const echo = await backend('gpu-a', 'echo');
    assert.equal(echo?.upgradable, true);
    assert.equal(echo?.availableVersion, '2.0.0');
    await until('gpu-a counts its upgrade', async () => (card('gpu-a').counts.upgradable === 1 ? true : undefined), 3000);
  });

  test('upgrade: backend.upgrade, the new version proven by backend.list; models the upgrade stopped come back or are said to', async () => {
    await frontendLoads(workers['gpu-a']!, 'echo', 'm1');
    const job = await call<JobView>('gpu-a', 'upgrade', { name: 'echo' });
    // The frontend loads m1 again while the job waits for it; the bare backend process is left for its next request.
    await until('the upgrade stopped m1', async () => (workers['gpu-a']!.running().includes('m1#0') ? undefined : true), 10_000);
    await frontendLoads(workers['gpu-a']!, 'echo', 'm1');
    const done = await finished('gpu-a', job);
    assert.equal(done.state, 'done', done.error ?? '');
    assert.equal(done.phase, 'upgraded to 2.0.0');
    assert.match(done.notice ?? '', /m1 running again/);
    assert.match(done.notice ?? '', /echo stopped by the upgrade and not running yet: LocalAI's frontend starts it again on the next request/);
    assert.ok(workers['gpu-a']!.received.some((r) => r.subject === 'backend.upgrade'));
    assert.equal((await backend('gpu-a', 'echo'))?.version, '2.0.0');
  });

  test('a worker with no upgrade handler is upgraded as LocalAI does it: backend.install with force', async () => {
    const done = await finished('gpu-b', await call<JobView>('gpu-b', 'upgrade', { name: 'echo' }));
    assert.equal(done.state, 'done', done.error ?? '');
    assert.match(done.notice ?? '', /no backend\.upgrade handler: upgraded with backend\.install and force/);
    const forced = workers['gpu-b']!.received.filter((r) => r.subject === 'backend.install').at(-1)!.body as Record<string, unknown>;
    assert.equal(forced.force, true);
    assert.equal((await backend('gpu-b', 'echo'))?.version, '2.0.0');
  });

  test('a worker that says it upgraded but still reports the old version (its cached gallery index) fails, with that reason', async () => {
    const done = await finished('gpu-c', await call<JobView>('gpu-c', 'upgrade', { name: 'echo' }));
    assert.equal(done.state, 'failed');
    assert.match(done.error ?? '', /said the upgrade succeeded but still reports 1\.0\.0, not 2\.0\.0: LocalAI's worker reads its gallery index from a cache/);
    assert.equal((await backend('gpu-c', 'echo'))?.version, '1.0.0');
  });

  test('unload frees a model and keeps its process; stop ends it (model.stop, answered once it has exited)', async () => {
    await frontendLoads(workers['gpu-b']!, 'echo', 'm2');
    const m2 = await until('m2 listed', async () => (await call<ProcessView[]>('gpu-b', 'processes')).find((p) => p.model === 'm2'), 3000);
    // The frontend then loads the model over gRPC, as LocalAI's does.
    await withBackend(m2.port, async (client) => {
      assert.equal((await client.loadModel({ model: 'm2', modelFile: 'm2', modelPath: '' }, 2000)).success, true);
      assert.equal((await client.status(2000)).state, 'READY');
    });
    const unloaded = await call<ProcessView>('gpu-b', 'unload', { model: 'm2' });
    assert.equal(unloaded.loaded, false);
    const sent = workers['gpu-b']!.received.find((r) => r.subject === 'model.unload')!.body as Record<string, unknown>;
    assert.equal(sent.model_name, 'm2');
    assert.equal(sent.address, `127.0.0.1:${m2.port}`);
    assert.ok(workers['gpu-b']!.running().includes('m2#0'), 'the process keeps running');
    // The worker's gRPC Free released the model; the process still answers.
    await withBackend(m2.port, async (client) => assert.equal((await client.status(2000)).state, 'UNINITIALIZED'));
    await call('gpu-b', 'stop', { model: 'm2' });
    assert.ok(!workers['gpu-b']!.running().includes('m2#0'));
    assert.equal(await portAnswers(m2.port), false);
    assert.deepEqual(workers['gpu-b']!.received.find((r) => r.subject === 'model.stop')!.body, { model_name: 'm2', process_key: 'm2#0', expected_address: `127.0.0.1:${m2.port}` });
  });

  test('delete removes the backend and the processes the worker stopped', async () => {
    const done = await finished('gpu-b', await call<JobView>('gpu-b', 'delete', { name: 'echo' }));
    assert.equal(done.state, 'done', done.error ?? '');
    assert.equal(await backend('gpu-b', 'echo'), undefined);
    assert.deepEqual(workers['gpu-b']!.running(), []);
  });

  test('what needs Hangar on the machine is refused with the reason', async () => {
    for (const method of ['rollback', 'respawn', 'logs', 'scan'] as const) {
      await assert.rejects(call('gpu-a', method, { name: 'echo', model: 'm1' }), (error: HangarError) => {
        assert.match(error.message, /needs Hangar on the worker's machine: run a Hangar agent beside this worker to get them$/);
        return true;
      });
    }
  });

  test('a worker that hangs goes offline with LocalAI\'s reason as soon as LocalAI says so, and its actions are refused', async () => {
    // Its machine hangs: Hangar's reads of it wait out their time limit (30 s), but LocalAI's word is shown at once.
    workers['gpu-c']!.freeze();
    const offline = await until('gpu-c offline', async () => (card('gpu-c').status === 'offline' && card('gpu-c').localai?.status === 'offline' ? card('gpu-c') : undefined), 5000);
    assert.equal(offline.reason, 'offline in LocalAI (no heartbeat from it)');
    await assert.rejects(call('gpu-c', 'install', { name: 'echo' }), /LocalAI worker gpu-c is offline in LocalAI \(no heartbeat from it\)/);
    const member = events.filter((e): e is Extract<NodeEvent, { type: 'member' }> => e.type === 'member' && e.member.name === 'gpu-c').at(-1)!;
    assert.equal((member.member as NodeCard).status, 'offline');
  });

  test('a worker waiting for approval, and one draining, show as such with their actions off', async () => {
    await startWorker('gpu-new');
    const pending = await until('gpu-new listed', async () => link.cards().find((c) => c.name === 'gpu-new'), 3000);
    assert.deepEqual([pending.status, pending.localai?.status, pending.reason], ['offline', 'pending', 'pending in LocalAI (waiting for an admin to approve it)']);
    await assert.rejects(call('gpu-new', 'install', { name: 'echo' }), /is pending in LocalAI \(waiting for an admin/);
    frontend.setStatus(workers['gpu-b']!.id, 'draining');
    const draining = await until('gpu-b draining', async () => (card('gpu-b').localai?.status === 'draining' ? card('gpu-b') : undefined), 3000);
    assert.equal(draining.status, 'offline');
    assert.equal(draining.reason, 'draining in LocalAI (it takes no new work)');
    await assert.rejects(call('gpu-b', 'upgrade', { name: 'echo' }), /is draining in LocalAI/);
  });
});
