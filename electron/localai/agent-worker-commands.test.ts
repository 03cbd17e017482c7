// The CLI's commands on LocalAI workers, as a user types them, against stand-ins that do what LocalAI's frontend and
// worker do: what each command shows of a worker and what it sends it. One real nats-server, a real `hangar agent`,
// real backend processes.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { hangar, json, read, startAgent, until, type Agent } from '../agent/test-agent.ts';
import { startNats, type NatsServer } from '../cluster/test-nats.ts';
import { tempDir, writeGallery } from '../core/testing/fixtures.ts';
import { workerSubjects } from './protocol.ts';
import { startGalleryServer, type GalleryServer } from './testing/gallery-server.ts';
import { startStandInFrontend, type StandInFrontend } from './testing/standin-frontend.ts';
import { StandInWorker } from './testing/standin-worker.ts';

const API_KEY = 'admin-key-0123456789';
const TOKEN = 'registration-token-0123456789';

describe('hangar commands on LocalAI workers', () => {
  let nats: NatsServer;
  let gallery: GalleryServer;
  let frontend: StandInFrontend;
  let nc: NatsConnection;
  let agent: Agent;
  const workers: Record<string, StandInWorker> = {};

  const run = (...args: string[]) => hangar(agent, ...args);
  const card = async (name: string) => (await read(agent, 'nodes')).find((c) => c.name === name)!;
  const received = (worker: string, subject: string) => workers[worker]!.received.filter((r) => r.subject === subject).map((r) => r.body);
  /** What LocalAI's frontend sends to install a backend on a worker, or to load a model on it. */
  const frontendInstalls = async (worker: string, backend: string, model?: string) => {
    const request = { backend, ...(model && { model_id: model }), backend_galleries: JSON.stringify([{ url: gallery.indexUrl, name: 'localai' }]) };
    const reply = await nc.request(workerSubjects.install(workers[worker]!.id), JSON.stringify(request), { timeout: 10_000 });
    assert.equal(reply.json<{ success: boolean }>().success, true, reply.string());
  };

  before(async () => {
    const root = await tempDir('localai-commands');
    nats = await startNats();
    gallery = await startGalleryServer([{ name: 'echo', version: '1.0.0' }]);
    frontend = await startStandInFrontend({ apiKey: API_KEY, registrationToken: TOKEN, galleries: [{ url: gallery.indexUrl, name: 'localai' }], staleMs: 1000, checkMs: 100 });
    const options = { nats: nats.url, frontend: frontend.url, registrationToken: TOKEN, heartbeatMs: 200, indexCacheMs: 0 };
    workers['w-new'] = new StandInWorker({ ...options, name: 'w-new', backendsDir: join(root, 'w-new'), basePort: 25500 });
    // A worker from before model.stop.
    workers['w-old'] = new StandInWorker({ ...options, name: 'w-old', backendsDir: join(root, 'w-old'), basePort: 25520, modelStopHandler: false });
    workers['w-gone'] = new StandInWorker({ ...options, name: 'w-gone', backendsDir: join(root, 'w-gone'), basePort: 25540 });
    for (const worker of Object.values(workers)) await worker.start();
    nc = await connect({ servers: nats.url.replace('nats://', '') });
    // Installed as an admin installs it from LocalAI's own pages: the process it starts is named like the backend.
    for (const name of ['w-new', 'w-old']) await frontendInstalls(name, 'echo');

    frontend.failGalleries(500);
    const keyFile = join(root, 'api-key');
    await writeFile(keyFile, `${API_KEY}\n`, { mode: 0o600 });
    const hubGallery = join(root, 'hub-index.yaml');
    await writeGallery(hubGallery, []);
    agent = await startAgent(join(root, 'hub'), hubGallery, [
      '--name', 'hub', '--ports', '24400-24499',
      '--localai-frontend', frontend.url, '--localai-api-key-file', keyFile, '--localai-nats', nats.url, '--localai-poll', '200', '--localai-reload-wait', '300',
    ]);
    await until('every worker online', async () => {
      const cards = (await read(agent, 'nodes')).filter((c) => c.kind === 'localai-worker');
      return cards.length === Object.keys(workers).length && cards.every((c) => c.status === 'online') ? true : undefined;
    }, 15_000);
  });

  after(async () => {
    agent?.child.kill('SIGKILL');
    await nc?.close();
    for (const worker of Object.values(workers)) await worker.stop();
    await frontend?.close();
    await gallery?.close();
    await nats?.stop();
  });

  test("with the frontend's gallery list failing, ls lists a worker's backends without upgrades and says why", async () => {
    const why = `the LocalAI frontend at ${frontend.url} answered /backends/galleries with 500: upstream unavailable`;
    const ls = await run('ls', '--on', 'w-new');
    assert.equal(ls.code, 0, ls.stderr);
    // The process LocalAI's backend.install started is the backend's own: it is keyed by the backend's name.
    assert.equal(ls.stdout, `NAME  VERSION  PROCESSES  STATUS\necho  1.0.0    echo       ok\n\nupgrades unknown: ${why}\n`);
    const matrix = await run('ls', '--on', 'all');
    assert.equal(matrix.code, 0, matrix.stderr);
    assert.match(matrix.stdout, /^BACKEND +THIS MACHINE +W-GONE +W-NEW +W-OLD\necho +- +- +1\.0\.0 +1\.0\.0\n\n/);
    assert.ok(matrix.stdout.includes(`\nw-new (${(await card('w-new')).id}): upgrades unknown: ${why}\n`), matrix.stdout);
    const all = await run('upgrade', '--all', '--on', 'w-new');
    assert.notEqual(all.code, 0);
    assert.match(all.stderr, /which backends have an upgrade is unknown: the LocalAI frontend at .* answered \/backends\/galleries with 500/);

    frontend.failGalleries(null);
    assert.equal((await run('gallery', '--refresh', '--on', 'w-new')).code, 0);
    assert.doesNotMatch((await run('ls', '--on', 'w-new')).stdout, /upgrades unknown/);
  });

  test('ps and ls show what the worker reports of its processes, and - for what it does not: no pid, start time or backend made up', async () => {
    await frontendInstalls('w-new', 'echo', 'm1');
    const ps = await run('ps', '--on', 'w-new');
    assert.equal(ps.code, 0, ps.stderr);
    assert.doesNotMatch(ps.stdout, /NaN/);
    const rows = ps.stdout.trimEnd().split('\n').map((line) => line.split(/ {2,}/));
    assert.deepEqual(rows.map((r) => r.slice(0, 8)), [
      ['MODEL', 'BACKEND', 'PID', 'PORT', 'STATE', '↺', 'RESTART', 'UP'],
      ['echo', 'echo', '-', '25500', 'ready', '0', 'never', '-'],
      // models.running does not say which backend runs m1.
      ['m1', '-', '-', '25501', 'ready', '0', 'never', '-'],
    ]);
    const [, m1] = await json<{ backend: string | null; pid: number | null; startedAt: string | null }[]>(agent, 'ps', '--on', 'w-new');
    assert.deepEqual([m1!.backend, m1!.pid, m1!.startedAt], [null, null, null]);
    assert.equal((await run('ls', '--on', 'w-new')).stdout, 'NAME  VERSION  PROCESSES  STATUS\necho  1.0.0    echo       ok\n');
  });

  test('stop MODEL stops that model alone: model.stop with its process key, as the frontend stops a replica', async () => {
    const stop = await run('stop', 'echo', '--on', 'w-new');
    assert.equal(stop.code, 0, stop.stderr);
    assert.equal(stop.stdout, 'stopped echo\n');
    assert.deepEqual(received('w-new', 'model.stop'), [{ model_name: 'echo', process_key: 'echo#0', expected_address: '127.0.0.1:25500' }]);
    assert.deepEqual(received('w-new', 'backend.stop'), []);
    assert.deepEqual(workers['w-new']!.running(), ['m1#0']);
  });

  test('install of a backend a worker has sends backend.install, which starts its stopped process again, as LocalAI does', async () => {
    const again = await run('install', 'echo', '--on', 'w-new');
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^install echo: already installed; the worker started its process again at 127\.0\.0\.1:\d+, as LocalAI's backend\.install does when none runs\n$/);
    assert.deepEqual(workers['w-new']!.running().sort(), ['echo#0', 'm1#0']);
    assert.equal((await run('install', 'echo', '--on', 'w-new')).stdout, 'install echo: already installed; its process runs\n');
  });

  test('a failed upgrade says which processes the worker stopped before it failed', async () => {
    gallery.publish([{ name: 'echo', version: '2.0.0' }]);
    assert.equal((await run('gallery', '--refresh', '--on', 'w-new')).code, 0);
    workers['w-new']!.gallery.failDownloads('the registry refused the pull');
    try {
      const upgrade = await run('upgrade', 'echo', '--on', 'w-new');
      assert.notEqual(upgrade.code, 0);
      assert.match(
        upgrade.stderr,
        /LocalAI worker w-new could not upgrade echo: upgrading backend from gallery: failed to download backend "[^"]+": the registry refused the pull; the worker had stopped echo, m1 first: LocalAI's frontend starts them again on the next request/,
      );
      assert.deepEqual(workers['w-new']!.running(), []);
    } finally {
      workers['w-new']!.gallery.failDownloads(null);
    }
  });

  test('a worker from before model.stop: backend.stop for a model, refused for one named like a backend (it would stop them all)', async () => {
    await frontendInstalls('w-old', 'echo', 'm2');
    const refused = await run('stop', 'echo', '--on', 'w-old');
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /LocalAI worker w-old could not stop echo: it predates model\.stop, and its backend\.stop of echo would stop every process of backend echo as well/);
    assert.deepEqual(received('w-old', 'backend.stop'), []);
    const stop = await run('stop', 'm2', '--on', 'w-old');
    assert.equal(stop.stdout, 'stopped m2\n', stop.stderr);
    assert.deepEqual(received('w-old', 'backend.stop'), [{ backend: 'm2' }]);
    assert.deepEqual(workers['w-old']!.running(), ['echo#0']);
  });

  test('a worker Hangar cannot reach is named once in its status and refusals; notes stand apart from the ls --on all table', async () => {
    await workers['w-gone']!.leaveNats();
    const cause = /could not list its (backends|models): it is not connected to NATS \(no responders\)/;
    // A call the worker took just before it left is never answered: the card first says so ("it did not answer within
    // 10 s"), which is true, and the next call finds no one.
    const gone = await until('w-gone failing', async () => {
      const c = await card('w-gone');
      return c.status === 'offline' && cause.test(c.reason ?? '') ? c : undefined;
    }, 25_000);
    assert.match(gone.reason!, new RegExp(`^failing: ${cause.source}$`));
    const install = await run('install', 'echo', '--on', 'w-gone');
    assert.notEqual(install.code, 0);
    assert.match(install.stderr, new RegExp(`^hangar: LocalAI worker w-gone is failing: ${cause.source}\\n$`));
    const matrix = await run('ls', '--on', 'all');
    // The table, a blank line, then what it does not say.
    assert.match(matrix.stdout, new RegExp(`\\necho +- +offline +\\S.*\\n\\nw-gone \\(${gone.id}\\): failing: ${cause.source}\\n`));
  });
});
