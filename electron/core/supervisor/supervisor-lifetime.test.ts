// The supervisor across its host's life: its table read back by a new supervisor, the host's death, hundreds of
// respawns and concurrent loads, and a Python backend's stale cwd. The rest of its cases are supervisor.test.ts.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { createInterface } from 'node:readline';
import { after, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { ProcessView } from '../../../shared/index.ts';
import { BackendClient } from './grpc-client.ts';
import { Server, ServerCredentials, status as grpcStatus } from '@grpc/grpc-js';
import { backendService } from '../../../backends/proto/service.ts';
import { currentPlatform } from '../platform/index.ts';
import { isAlive } from './identity.ts';
import { processesInDirectory } from './scan.ts';
import type { BackendTarget } from './supervisor.ts';
import type { TableEntry } from './table.ts';
import { assertPythonGrpc, swapOutOfBand, swapStaged, writePyecho, writeRelayBackend } from './test-helpers.ts';
import { childStates, flushedTable, gone, killAfter, nextEvent, openedSince, pgidOf, readTable, setUp, settledDescriptors, stopAfter, writeTable } from '../testing/supervisor-setup.ts';
import { TS_NODE } from '../testing/ts-node.ts';

describe("the supervisor across its host's life", { concurrency: false }, () => {
  let ctx: Awaited<ReturnType<typeof setUp>>;
  before(async () => {
    ctx = await setUp();
  });
  after(async () => {
    await ctx.tearDown();
  });

  test('the persisted table re-adopts a live backend in a new supervisor, and never adopts or kills a recycled pid', async (t) => {
    const { home, open, relay } = ctx;
    const stateDir = join(home.root, 'state-adopt');
    const owner = await open(t, { stateDir });
    const started = await owner.ensureRunning(relay, 'adopt');
    await owner.close({ stopAll: false });
    assert.equal(isAlive(started.process.pid), true, 'close({ stopAll: false }) leaves the backend running');

    // A live process holding a recorded pid, but with another start time: someone else's process.
    const impostor = spawn('sleep', ['300'], { cwd: relay.dir, stdio: 'ignore' });
    killAfter(t, impostor);
    await once(impostor, 'spawn');
    const fake: TableEntry = { model: 'recycled', backend: 'relay', pid: impostor.pid!, port: 29548, startedAt: '', startTime: '1', dir: relay.dir };
    const gone1: TableEntry = { model: 'vanished', backend: 'relay', pid: 2 ** 22 + 1, port: 29549, startedAt: '', startTime: '1' };
    writeTable(stateDir, [...readTable(stateDir), fake, gone1]);

    const heir = await open(t, { stateDir });
    assert.equal(heir.get('adopt')?.pid, started.process.pid);
    assert.equal(heir.get('adopt')?.cwd, 'ok');
    assert.equal(heir.get('recycled'), null);
    assert.equal(heir.get('vanished'), null);
    assert.match((await heir.logs('adopt')).at(-1)!.text, /^later output unavailable: backend relay .* adopted/);
    assert.deepEqual((await flushedTable(heir, stateDir)).map((e) => e.model), ['adopt']);
    assert.equal((await heir.load(relay, 'adopt')).reused, true);

    await heir.close({ stopAll: true });
    assert.equal(await gone(started.process.pid), true);
    assert.equal(isAlive(impostor.pid!), true, 'the impostor is not ours and is left alone');
  });

  /** Runs testdata/host.ts in a child process; resolves with the child and the backend pid it printed. */
  async function startHost(t: TestContext, mode: 'idle' | 'leave', portRange: [number, number]) {
    const { home, relay } = ctx;
    const options = { backendsDir: home.backendsDir, modelsDir: home.modelsDir, stateDir: join(home.root, `host-${mode}`), portRange };
    const host = spawn(process.execPath, [...TS_NODE, join(import.meta.dirname, 'testdata/host.ts'), mode, JSON.stringify(options), JSON.stringify(relay)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    killAfter(t, host);
    const exited = once(host, 'exit');
    const [line] = (await once(createInterface({ input: host.stdout! }), 'line')) as [string];
    return { host, exited, backendPid: Number(line) };
  }

  test('when the host is SIGKILLed, its backends die', async (t) => {
    const { host, exited, backendPid } = await startHost(t, 'idle', [29500, 29519]);
    assert.equal(isAlive(backendPid), true);
    host.kill('SIGKILL');
    await exited;
    assert.equal(await gone(backendPid), true, 'the backend outlived its host');
  });

  test('close({ stopAll: false }) lets the host exit on its own while its backend keeps running', async (t) => {
    const { exited, backendPid } = await startHost(t, 'leave', [29520, 29539]);
    try {
      const [code] = (await exited) as [number];
      assert.equal(code, 0);
      await delay(1500); // longer than the reaper's TERM-to-KILL pause, had it fired
      assert.equal(isAlive(backendPid), true, 'the kept backend died with its host');
    } finally {
      process.kill(-backendPid, 'SIGKILL');
    }
    assert.equal(await gone(backendPid), true);
  });

  test('gate 6: a LoadModel failure from a stale cwd is explained, respawned and retried once', async () => {
    const { supervisor, home } = ctx;
    // The relay's upstream runs here, so a LoadModel can swap the relay's own directory away mid-call, after every
    // gate has passed: the one window only gate 6 covers.
    let onLoad: () => { success: boolean; message: string } = () => ({ success: true, message: 'loaded' });
    const server = new Server();
    server.addService(backendService().definition, {
      Health: (_call: unknown, done: (e: null, r: object) => void) => done(null, { message: Buffer.from('OK') }),
      Free: (_call: unknown, done: (e: null, r: object) => void) => done(null, { success: true, message: 'freed' }),
      LoadModel: (_call: unknown, done: (e: object | null, r?: object) => void) => {
        const outcome = onLoad();
        if (outcome.success) done(null, outcome);
        else done({ code: grpcStatus.INTERNAL, details: outcome.message });
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
    );
    const upstream = `127.0.0.1:${port}`;
    const target: BackendTarget = { name: 'sixth', dir: join(home.backendsDir, 'sixth') };
    writeRelayBackend(target.dir, upstream);
    const swapThenFail = () => {
      writeRelayBackend(`${target.dir}.install-tmp`, upstream);
      swapStaged(home.backendsDir, 'sixth');
      return { success: false, message: "ENOENT: no such file or directory, open 'VERSION'" };
    };
    try {
      const first = await supervisor.load(target, 'six');
      let calls = 0;
      onLoad = () => (++calls === 1 ? swapThenFail() : { success: true, message: 'loaded six with sixth 2' });
      const retried = await supervisor.load(target, 'six');
      assert.equal(calls, 2);
      assert.notEqual(retried.pid, first.pid);
      assert.deepEqual([retried.reused, retried.message], [false, `respawned pid ${first.pid} → ${retried.pid}: its directory was replaced; loaded six with sixth 2`]);
      const note = (await supervisor.logs('six')).find((l) => l.text.startsWith('[hangar]'));
      assert.equal(note?.text, `[hangar] backend sixth (pid ${first.pid}) was running from a directory that a reinstall replaced; respawned from ${target.dir}`);

      onLoad = swapThenFail;
      await assert.rejects(supervisor.load(target, 'six'), (err: Error) => {
        assert.equal(err.name, 'HangarError');
        assert.equal(
          err.message,
          `backend sixth (pid ${retried.pid}) was running from a directory that a reinstall replaced; after a respawn, ` +
            "backend sixth could not load model six: ENOENT: no such file or directory, open 'VERSION'",
        );
        return true;
      });
    } finally {
      await supervisor.stop('six', { force: true });
      server.forceShutdown();
    }
  });

  test('300 respawn cycles leave no zombie and no extra open fd, and close({ stopAll }) leaves nothing running', async (t) => {
    const { home, open, relay } = ctx;
    const supervisor = await open(t, { portQuarantineMs: 0, stateDir: join(home.root, 'state-cycles') });
    await supervisor.ensureRunning(relay, 'cycle');
    await supervisor.respawn('cycle');
    // Other parts of this process open and close descriptors of their own meanwhile (the first supervisor's ports
    // leave quarantine, earlier tests' sockets finish closing), and a number one cycle frees the next may reuse: what
    // counts is how many are open once they settle, after one cycle and after 301. A leak of one per cycle adds 300;
    // fewer open after 301 is earlier tests' sockets finishing their close.
    const base = await settledDescriptors(supervisor);
    await supervisor.respawn('cycle');
    const afterOne = await settledDescriptors(supervisor);
    for (let i = 0; i < 300; i++) await supervisor.respawn('cycle');
    const afterAll = await settledDescriptors(supervisor);
    assert.deepEqual(childStates().filter((s) => s === 'Z'), [], 'zombie children');
    const opened = (now: Map<string, string>) => openedSince(base, now).join(', ');
    assert.ok(afterAll.size <= afterOne.size, `open fds grew from ${afterOne.size} to ${afterAll.size}: after one cycle ${opened(afterOne)}; after 301 ${opened(afterAll)}`);
    await supervisor.close({ stopAll: true });
    assert.deepEqual([...(await processesInDirectory(currentPlatform(), home.backendsDir, null))], []);
  });

  test('50 concurrent loads and respawns on one model run one at a time and end with one process', async (t) => {
    const { supervisor, relay } = ctx;
    stopAfter(t, supervisor, 'busy');
    // Each process is alive from its first view until its row goes (its last view: stopping, or exited while starting).
    const live = new Map<number, ProcessView['state']>();
    let most = 0;
    const track = (v: ProcessView) => {
      if (v.model !== 'busy') return;
      live.set(v.pid, v.state);
      most = Math.max(most, live.size);
    };
    const gone = (model: string) => {
      if (model !== 'busy') return;
      for (const [pid, state] of live) if (state === 'stopping' || state === 'exited') live.delete(pid);
    };
    supervisor.on('process', track);
    supervisor.on('process-removed', gone);
    await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? supervisor.load(relay, 'busy') : supervisor.respawn('busy'))));
    supervisor.off('process', track);
    supervisor.off('process-removed', gone);
    assert.equal(most, 1, 'two processes for one model were alive at once');
    const [only] = supervisor.list().filter((v) => v.model === 'busy');
    assert.equal(live.size, 1);
    assert.equal(only?.pid, [...live.keys()][0]);
    // Every process running from the backend's directory belongs to the one supervised process group.
    const strays = [...(await processesInDirectory(currentPlatform(), relay.dir, null))].filter((pid) => pgidOf(pid) !== only!.pid);
    assert.deepEqual(strays, []);
    await supervisor.stop('busy');
  });

  test('Python backend: the stale process fails with FileNotFoundError, but load() respawns and succeeds', async (t) => {
    assertPythonGrpc();
    const { supervisor, home } = ctx;
    stopAfter(t, supervisor, 'py');
    const py: BackendTarget = { name: 'pyecho', dir: join(home.backendsDir, 'pyecho') };
    writePyecho(py.dir, '1.0.0');
    const first = await supervisor.load(py, 'py');
    assert.match(first.message, /with pyecho 1\.0\.0$/);

    const stale = nextEvent(supervisor, (v) => v.model === 'py' && v.cwd === 'stale');
    await swapOutOfBand(home.backendsDir, 'pyecho', (dir) => writePyecho(dir, '2.0.0'));
    await stale;
    // Gates bypassed: the seed's exact failure, while Health stays OK.
    const direct = new BackendClient(`127.0.0.1:${first.port}`);
    assert.equal(await direct.health(5000), 'OK');
    await assert.rejects(direct.loadModel({ model: 'py', modelFile: 'py', modelPath: home.modelsDir }, 5000), /FileNotFoundError/);
    direct.close();

    const second = await supervisor.load(py, 'py');
    assert.notEqual(second.pid, first.pid);
    assert.match(second.message, /with pyecho 2\.0\.0$/);
    assert.doesNotMatch(second.message, /FileNotFoundError/);
    await supervisor.stop('py');
  });
});
