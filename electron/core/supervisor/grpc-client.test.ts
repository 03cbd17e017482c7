import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { status } from '@grpc/grpc-js';
import { buildSync } from 'esbuild';
import { BackendCallError, BackendClient } from './grpc-client.ts';
import { assertPythonGrpc, PYTHON } from './test-helpers.ts';

const repo = resolve(import.meta.dirname, '../../..');
const pyecho = join(import.meta.dirname, 'testdata/pyecho');
const timeoutMs = 5000;

interface Running {
  address: string;
  child: ChildProcess;
  stderr: () => string;
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
    server.on('error', fail);
  });
}

function tcpOpen(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), done(true)));
    socket.once('error', () => done(false));
  });
}

/** Starts `<dir>/run.sh --addr 127.0.0.1:PORT` in `cwd` and resolves once a TCP connect to the port succeeds. */
async function start(dir: string, cwd: string, env: Record<string, string>, port: number): Promise<Running> {
  const child = spawn(join(dir, 'run.sh'), ['--addr', `127.0.0.1:${port}`], {
    cwd,
    env: { ...process.env, HANGAR_NODE: process.execPath, HANGAR_PYTHON: PYTHON, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const deadline = Date.now() + timeoutMs;
  while (!(await tcpOpen(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`backend in ${dir} did not open its port: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  return { address: `127.0.0.1:${port}`, child, stderr: () => stderr };
}

/** SIGTERM, and the exit code the backend chose. */
function stop(running: Running): Promise<number | null> {
  return new Promise((done) => {
    if (running.child.exitCode !== null) return done(running.child.exitCode);
    running.child.once('exit', (code) => done(code));
    running.child.kill('SIGTERM');
  });
}

/**
 * Builds backends/echo the way `npm run build` does (sources minus .ts, server.ts bundled into a self-contained
 * server.cjs), into `out`: the test runs the current sources whatever state the rest of dist/ is in.
 */
function buildEcho(out: string): string {
  const source = join(repo, 'backends/echo');
  cpSync(source, out, { recursive: true, filter: (file) => !file.endsWith('.ts') });
  buildSync({
    entryPoints: [join(source, 'server.ts')],
    outfile: join(out, 'server.cjs'),
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    bundle: true,
    logLevel: 'warning',
  });
  return out;
}

/** The swap an install performs: the live tree moves aside, a fresh copy takes its path, the old one is deleted. */
function reinstall(live: string, source: string): void {
  renameSync(live, `${live}.install-backup`);
  cpSync(source, live, { recursive: true });
  rmSync(`${live}.install-backup`, { recursive: true, force: true });
}

async function rejection(promise: Promise<unknown>): Promise<BackendCallError> {
  const error = await promise.then(
    () => assert.fail('the call succeeded'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof BackendCallError, `not a BackendCallError: ${String(error)}`);
  return error;
}

/** Runs the same protocol checks against a backend tree; `source` is copied to a temp dir and run from there. */
function backendSuite(name: string, source: (scratch: string) => string, expected: { version: string; cwdError: RegExp; reportsMemory: boolean }) {
  let pristine: string;
  let root: string;
  let live: string;
  const processes: Running[] = [];
  const clients: BackendClient[] = [];

  async function launch(env: Record<string, string> = {}, port?: number) {
    const running = await start(live, live, env, port ?? (await freePort()));
    processes.push(running);
    return running;
  }
  function client(address: string, token?: string) {
    const made = new BackendClient(address, token === undefined ? {} : { token });
    clients.push(made);
    return made;
  }

  before(() => {
    root = mkdtempSync(join(tmpdir(), `hangar-${name}-`));
    live = join(root, name);
    pristine = source(join(root, 'pristine'));
    cpSync(pristine, live, { recursive: true });
  });
  after(async () => {
    for (const made of clients) made.close();
    await Promise.all(processes.map(stop));
    rmSync(root, { recursive: true, force: true });
  });

  test('answers Health with OK as soon as its port accepts connections', async () => {
    const running = await launch();
    const backend = client(running.address);
    const begin = performance.now();
    const reply = await backend.health(timeoutMs);
    console.log(`${name}: Health after port open took ${(performance.now() - begin).toFixed(1)} ms`);
    assert.equal(reply, 'OK');
    assert.match(running.stderr(), /listening on 127\.0\.0\.1:\d+/);
  });

  test('a client that found the port closed answers OK as soon as the backend listens', async () => {
    const port = await freePort();
    const backend = client(`127.0.0.1:${port}`);
    assert.equal((await rejection(backend.health(timeoutMs))).grpcCode, status.UNAVAILABLE);
    await launch({}, port);
    assert.equal(await backend.health(timeoutMs), 'OK');
  });

  test('loads a model, reports READY, frees it, and exits 0 on SIGTERM', async () => {
    const running = await launch();
    const backend = client(running.address);
    const first = await backend.status(timeoutMs);
    assert.equal(first.state, 'UNINITIALIZED');
    // The memory a backend reports for itself, where it does (the echo backend: its RSS; the Python one: none).
    if (expected.reportsMemory) assert.ok(first.memory && first.memory.total > 1024 * 1024, `${first.memory?.total} bytes`);
    else assert.equal(first.memory, null);
    const loaded = await backend.loadModel({ model: 'tiny', modelFile: 'tiny.bin', modelPath: root }, timeoutMs);
    assert.equal(loaded.success, true);
    assert.match(loaded.message, /tiny/);
    assert.match(loaded.message, new RegExp(expected.version.replaceAll('.', '\\.')));
    assert.equal((await backend.status(timeoutMs)).state, 'READY');
    assert.equal((await backend.free(timeoutMs)).success, true);
    assert.equal((await backend.status(timeoutMs)).state, 'UNINITIALIZED');
    assert.equal(await stop(running), 0);
  });

  test('requires the bearer token when LOCALAI_GRPC_AUTH_TOKEN is set', async () => {
    const running = await launch({ LOCALAI_GRPC_AUTH_TOKEN: 's3cret' });
    const withoutToken = await rejection(client(running.address).health(timeoutMs));
    assert.equal(withoutToken.grpcCode, status.UNAUTHENTICATED);
    const wrongToken = await rejection(client(running.address, 'nope').health(timeoutMs));
    assert.equal(wrongToken.grpcCode, status.UNAUTHENTICATED);
    assert.equal(await client(running.address, 's3cret').health(timeoutMs), 'OK');
  });

  test('after its directory is swapped away: Health stays OK, LoadModel fails with the cwd error', async () => {
    const running = await launch();
    const backend = client(running.address);
    assert.equal((await backend.loadModel({ model: 'before', modelFile: '', modelPath: '' }, timeoutMs)).success, true);

    reinstall(live, pristine);

    assert.equal(await backend.health(timeoutMs), 'OK');
    const error = await rejection(backend.loadModel({ model: 'after', modelFile: '', modelPath: '' }, timeoutMs));
    assert.ok([status.INTERNAL, status.UNKNOWN].includes(error.grpcCode), `code ${error.grpcCode}`);
    assert.match(error.details, expected.cwdError);
    assert.match(error.message, /LoadModel/);
  });
}

describe('BackendClient against the built echo backend', () => {
  backendSuite(
    'echo',
    buildEcho,
    { version: '1.0.0', cwdError: /ENOENT: no such file or directory, open 'VERSION'/, reportsMemory: true },
  );
});

describe('BackendClient against the Python test backend', () => {
  before(assertPythonGrpc);
  backendSuite('pyecho', () => pyecho, { version: '2.0.0', cwdError: /FileNotFoundError: /, reportsMemory: false });
});
