import assert from 'node:assert/strict';
import { cp, mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { echoSource, tempDir, writeGallery } from '../../core/testing/fixtures.ts';
import { BackendClient } from '../../core/supervisor/grpc-client.ts';
import { StandInServer, type StandInServerOptions } from './standin-server.ts';

const PYECHO = resolve('electron/core/supervisor/testdata/pyecho');
const NOT_FOUND = { error: { code: 404, message: 'Resource not found', type: '' } };

interface Setup {
  root: string;
  backendsDir: string;
  gallery: string;
  server: StandInServer;
  /** Points the gallery's echo entry at a fresh source of `version`. */
  publish(version: string): Promise<void>;
}

/** A server over a temp backends dir whose gallery offers echo 1.0.0; `before` runs before it starts. */
async function setup(t: TestContext, options: Partial<StandInServerOptions> = {}, before?: (backendsDir: string, root: string) => Promise<void>): Promise<Setup> {
  const root = await tempDir('standin-server');
  const backendsDir = join(root, 'backends');
  const gallery = join(root, 'index.yaml');
  const publish = async (version: string) => writeGallery(gallery, [{ name: 'echo', uri: await echoSource(root, version), version }]);
  await publish('1.0.0');
  await mkdir(backendsDir, { recursive: true });
  await before?.(backendsDir, root);
  const server = new StandInServer({ backendsDir, gallery, models: { m: 'echo' }, healthAttempts: 100, healthIntervalMs: 20, ...options });
  await server.start();
  t.after(async () => {
    await server.stop();
    await rm(root, { recursive: true, force: true });
  });
  return { root, backendsDir, gallery, server, publish };
}

async function placeEcho(backendsDir: string, root: string, name: string): Promise<void> {
  await cp(await echoSource(root, `placed-${name}`), join(backendsDir, name), { recursive: true });
}

async function call(server: StandInServer, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  // Objects go as JSON; a string or a Blob as given (fetch types a string text/plain, an untyped Blob not at all).
  const raw = body === undefined || typeof body === 'string' || body instanceof Blob;
  return fetch(server.url + path, {
    method,
    headers: { ...(!raw && { 'content-type': 'application/json' }), ...headers },
    body: raw ? (body as string | Blob | undefined) : JSON.stringify(body),
  });
}

async function answer(response: Response): Promise<{ status: number; body: unknown }> {
  return { status: response.status, body: await response.json() };
}

/** Starts a gallery job and waits until it is processed. */
async function job(server: StandInServer, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const started = (await (await call(server, method, path, body)).json()) as { id: string; status_url: string };
  assert.equal(started.status_url, `${server.url}/backends/jobs/${started.id}`);
  for (;;) {
    const status = (await (await fetch(started.status_url)).json()) as Record<string, unknown>;
    if (status.processed) return status;
    await sleep(10);
  }
}

async function complete(server: StandInServer, prompt: string): Promise<{ status: number; body: { choices?: { text: string }[]; error?: { message: string } } }> {
  return answer(await call(server, 'POST', '/v1/completions', { model: 'm', prompt })) as never;
}

async function system(server: StandInServer): Promise<unknown> {
  return (await call(server, 'GET', '/system')).json();
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** ppid and process group, from /proc/PID/stat (fields after the command's closing parenthesis). */
async function procStat(pid: number): Promise<{ ppid: number; pgrp: number }> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8');
  const [, ppid, pgrp] = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(ppid), pgrp: Number(pgrp) };
}

/** The `--addr` a backend process was started with (run.sh execs the runtime with the same arguments). */
async function addressOf(pid: number): Promise<string> {
  const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
  return argv[argv.indexOf('--addr') + 1]!;
}

test('legacy API keys guard every route but the health checks, with LocalAI 401', async (t) => {
  const { server } = await setup(t, { apiKeys: ['sekrit'] });
  const denied = await call(server, 'GET', '/system');
  assert.equal(denied.headers.get('www-authenticate'), 'Bearer');
  assert.deepEqual(await answer(denied), { status: 401, body: { error: { code: 401, message: 'An authentication key is required', type: 'invalid_request_error' } } });
  assert.equal((await call(server, 'GET', '/no/such/route')).status, 401, 'auth runs before routing');
  assert.deepEqual(await answer(await call(server, 'GET', '/no/such/route', undefined, { authorization: 'Bearer sekrit' })), { status: 404, body: NOT_FOUND });
  const health = await call(server, 'GET', '/healthz');
  assert.deepEqual([health.status, await health.text()], [200, '']);
  assert.equal((await call(server, 'GET', '/version', undefined, { authorization: 'Bearer nope', 'x-api-key': 'sekrit' })).status, 401, 'Authorization wins');
  const accepted: Record<string, string>[] = [{ 'x-api-key': 'sekrit' }, { 'xi-api-key': 'sekrit' }, { authorization: 'sekrit' }, { cookie: 'a=b; token=sekrit' }];
  for (const headers of accepted) {
    assert.equal((await call(server, 'GET', '/version', undefined, headers)).status, 200, JSON.stringify(headers));
  }
});

test('errors come in LocalAI envelope: Echo prefixes, 404 rewritten, 415 for an untyped body', async (t) => {
  const { server } = await setup(t, { version: 'v3.0.0' });
  const envelope = (code: number, message: string) => ({ status: code, body: { error: { code, message, type: '' } } });
  const untyped = new Blob(['{"model":"m"}']);
  assert.deepEqual(await answer(await call(server, 'POST', '/backend/shutdown', untyped)), envelope(415, 'code=415, message=Unsupported Media Type'));
  assert.deepEqual(await answer(await call(server, 'POST', '/backend/shutdown', 'model=m', { 'content-type': 'text/plain' })), envelope(415, 'code=415, message=Unsupported Media Type'));
  assert.deepEqual(await answer(await call(server, 'POST', '/backend/shutdown')), envelope(400, 'code=400, message=model is required'));
  assert.deepEqual(await answer(await call(server, 'POST', '/backend/shutdown', { model: 'm' })), { status: 404, body: NOT_FOUND });
  assert.deepEqual(await answer(await call(server, 'POST', '/backend/load')), { status: 400, body: { loaded: null, message: 'model is required' } });
  assert.deepEqual(await answer(await call(server, 'GET', '/backend/monitor?model=m')), envelope(500, 'backend m is not currently loaded'));
  assert.deepEqual(await answer(await call(server, 'GET', '/backends/jobs/nope')), envelope(500, 'could not find any status for ID'));
  const wrongMethod = await call(server, 'DELETE', '/system');
  assert.equal(wrongMethod.headers.get('allow'), 'OPTIONS, GET');
  assert.deepEqual(await answer(wrongMethod), envelope(405, 'code=405, message=Method Not Allowed'));
  const unknown = await answer(await call(server, 'POST', '/v1/completions', { model: 'nope', prompt: 'hi' }));
  assert.deepEqual(unknown, { status: 404, body: { error: { code: 404, message: 'model "nope" not found. To see available models, call GET /v1/models', type: 'invalid_request_error' } } });
  const version = await call(server, 'GET', '/version/');
  assert.equal(version.headers.get('content-type'), 'application/json');
  assert.equal(await version.text(), '{"version":"v3.0.0 (82c191afadf5f005281e798ccfa0ffd0d5805030)"}\n', 'trailing slash stripped; a newline ends the JSON');
});

test('/system lists the backends registered at start, not what appears on disk later', async (t) => {
  const { server, backendsDir, root, gallery } = await setup(t, {}, (dir, root) => placeEcho(dir, root, 'echo'));
  assert.deepEqual(await system(server), { backends: ['echo'], loaded_models: [] });
  await placeEcho(backendsDir, root, 'other');
  assert.deepEqual(await system(server), { backends: ['echo'], loaded_models: [] });
  // Already installed and runnable: the apply completes at once and registers nothing.
  assert.equal((await job(server, 'POST', '/backends/apply', { id: 'other' })).message, 'completed');
  assert.deepEqual(await system(server), { backends: ['echo'], loaded_models: [] });
  const restarted = new StandInServer({ backendsDir, gallery, models: {} });
  await restarted.start();
  t.after(() => restarted.stop());
  assert.deepEqual(await system(restarted), { backends: ['echo', 'other'], loaded_models: [] });
});

test('a load runs run.sh as a direct child in the backend directory, reused warm until shut down', async (t) => {
  const { server, backendsDir } = await setup(t);
  const installed = await job(server, 'POST', '/backends/apply', { id: 'echo' });
  assert.deepEqual(installed, {
    deletion: false, file_name: '', processed: true, message: 'completed', progress: 100, file_size: '', downloaded_size: '',
    gallery_element_name: 'echo', cancelled: false, cancellable: false,
  });
  const metadata = JSON.parse(await readFile(join(backendsDir, 'echo', 'metadata.json'), 'utf8')) as Record<string, string>;
  assert.deepEqual(Object.keys(metadata), ['name', 'gallery_url', 'installed_at', 'version', 'uri']);
  assert.equal(metadata.version, '1.0.0');

  const loads = await Promise.all([1, 2].map(async () => answer(await call(server, 'POST', '/backend/load', { model: 'm' }))));
  for (const load of loads) assert.deepEqual(load, { status: 200, body: { loaded: ['m'], message: 'model loaded' } });
  assert.equal(server.spawned, 1, 'concurrent loads are coalesced');
  const pid = server.pids().get('m')!;
  const [cwd, dir] = await Promise.all([stat(`/proc/${pid}/cwd`), stat(join(backendsDir, 'echo'))]);
  assert.deepEqual([cwd.dev, cwd.ino], [dir.dev, dir.ino], 'cwd is the backend directory');
  assert.deepEqual(await procStat(pid), { ppid: process.pid, pgrp: pid }, 'a direct child leading its own process group');
  assert.match(await addressOf(pid), /^127\.0\.0\.1:\d+$/);

  assert.deepEqual(await system(server), { backends: ['echo'], loaded_models: [{ id: 'm', backend: 'echo' }] });
  // The backend's StatusResponse as LocalAI's JSON gives it: READY, and the memory the echo backend reports (its RSS).
  const monitor = (await answer(await call(server, 'GET', '/backend/monitor?model=m'))) as { status: number; body: { state: number; memory: { total: number; breakdown: { rss: number } } } };
  assert.deepEqual([monitor.status, monitor.body.state, monitor.body.memory.breakdown.rss], [200, 2, monitor.body.memory.total]);
  assert.ok(monitor.body.memory.total > 1024 * 1024);
  const completion = await complete(server, 'hi');
  assert.equal(completion.status, 200);
  assert.deepEqual(completion.body.choices, [{ index: 0, finish_reason: 'stop', text: 'echo 1.0.0: hi' }]);
  assert.equal(server.spawned, 1, 'served warm');

  assert.deepEqual(await answer(await call(server, 'POST', '/backend/shutdown', { model: 'm' })), { status: 200, body: { message: 'model stopped' } });
  assert.equal(isAlive(pid), false);
  assert.deepEqual(server.pids(), new Map());
  assert.deepEqual(await answer(await call(server, 'POST', '/backend/shutdown', { model: 'm' })), { status: 404, body: NOT_FOUND });
});

test('an upgrade swaps the directory under a running model, which keeps its process and fails with ENOENT', async (t) => {
  const { server, backendsDir, publish } = await setup(t, { indexCacheMs: 0 });
  await job(server, 'POST', '/backends/apply', { id: 'echo' });
  assert.equal((await complete(server, 'hi')).body.choices?.[0]?.text, 'echo 1.0.0: hi');
  const pid = server.pids().get('m')!;

  await publish('2.0.0');
  assert.equal((await job(server, 'POST', '/backends/upgrade/echo')).message, 'completed');
  assert.equal((await readFile(join(backendsDir, 'echo', 'VERSION'), 'utf8')).trim(), '2.0.0');
  assert.deepEqual((await readdir(backendsDir)).sort(), ['echo'], 'no staging or backup left');

  const failed = await complete(server, 'hi');
  assert.deepEqual(failed, { status: 500, body: { error: { code: 500, message: "rpc error: code = Internal desc = ENOENT: no such file or directory, open 'VERSION'", type: '' } } });
  assert.equal(server.spawned, 1, 'the old process was reused: no new spawn');
  assert.equal(server.pids().get('m'), pid);
  const client = new BackendClient(await addressOf(pid));
  t.after(() => client.close());
  assert.equal(await client.health(2_000), 'OK', 'the old process still answers Health');
  // Registered while `echo.backup` still held a run.sh, and never unregistered.
  assert.deepEqual(await system(server), { backends: ['echo', 'echo.backup'], loaded_models: [{ id: 'm', backend: 'echo' }] });

  await call(server, 'POST', '/backend/shutdown', { model: 'm' });
  assert.equal((await complete(server, 'hi')).body.choices?.[0]?.text, 'echo 2.0.0: hi');
  assert.equal(server.spawned, 2);
});

test('an upgrade within the index cache installs the gallery as it was first read', async (t) => {
  const { server, backendsDir, publish } = await setup(t);
  await job(server, 'POST', '/backends/apply', { id: 'echo' });
  await publish('2.0.0');
  assert.equal((await job(server, 'POST', '/backends/upgrade/echo')).message, 'completed');
  assert.equal((await readFile(join(backendsDir, 'echo', 'VERSION'), 'utf8')).trim(), '1.0.0');
});

test('a failed upgrade deletes the working backend, which stays registered', async (t) => {
  const { server, backendsDir, root, gallery } = await setup(t, { indexCacheMs: 0 });
  await job(server, 'POST', '/backends/apply', { id: 'echo' });
  const empty = join(root, 'empty');
  await mkdir(empty);
  await writeGallery(gallery, [{ name: 'echo', uri: empty, version: '2.0.0' }]);
  const failed = await job(server, 'POST', '/backends/upgrade/echo');
  const error = 'upgrade validation failed: run.sh not found in new backend';
  assert.deepEqual(failed, {
    deletion: false, file_name: '', error, processed: true, message: `error: ${error}`, progress: 0, file_size: '', downloaded_size: '',
    gallery_element_name: '', cancelled: false, cancellable: false,
  });
  assert.deepEqual(await readdir(backendsDir), []);
  assert.deepEqual(await system(server), { backends: ['echo'], loaded_models: [] });
});

test('a backend that never becomes ready fails the load, and the model cools down', async (t) => {
  const { server } = await setup(t, { models: { bad: 'bad' }, healthAttempts: 3 }, async (dir) => {
    await mkdir(join(dir, 'bad'));
    await writeFile(join(dir, 'bad', 'run.sh'), '#!/bin/sh\necho "bad: cannot start" >&2\nexit 3\n', { mode: 0o755 });
  });
  assert.deepEqual(await answer(await call(server, 'POST', '/backend/load', { model: 'bad' })), {
    status: 500,
    body: { loaded: null, message: 'failed to load model: failed to load model with internal loader: grpc service not ready: backend process exited with code 3: bad: cannot start' },
  });
  const cooldown = 'model "bad" load is in cooldown after a recent failure; retry after 10s';
  assert.deepEqual(await answer(await call(server, 'POST', '/backend/load', { model: 'bad' })), { status: 500, body: { loaded: null, message: `failed to load model: ${cooldown}` } });
  const refused = await call(server, 'POST', '/v1/completions', { model: 'bad', prompt: 'hi' });
  assert.equal(refused.headers.get('retry-after'), '10');
  assert.deepEqual(await answer(refused), { status: 503, body: { error: { code: 503, message: cooldown, type: '' } } });
  assert.equal(server.spawned, 1);
});

test('runs the Python backend the same way', async (t) => {
  const { server } = await setup(t, { models: { m: 'pyecho' } }, (dir) => cp(PYECHO, join(dir, 'pyecho'), { recursive: true }));
  assert.equal((await complete(server, 'hi')).body.choices?.[0]?.text, 'pyecho 2.0.0: hi');
});

test('a crash kills the backends and the server stops answering', async (t) => {
  const { server } = await setup(t);
  await job(server, 'POST', '/backends/apply', { id: 'echo' });
  await call(server, 'POST', '/backend/load', { model: 'm' });
  const pid = server.pids().get('m')!;
  await server.crash();
  assert.equal(isAlive(pid), false);
  await assert.rejects(fetch(`${server.url}/healthz`));
});
