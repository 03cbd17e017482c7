import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, readdirSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
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
import { LogRing } from './log-ring.ts';
import { PortPool } from './ports.ts';
import { processesInDirectory } from './scan.ts';
import { Supervisor, type BackendTarget, type SupervisorOptions } from './supervisor.ts';
import type { TableEntry } from './table.ts';
import {
  assertPythonGrpc,
  makeHome,
  startUpstream,
  swapOutOfBand,
  swapStaged,
  writeEcho,
  writePyecho,
  writeRelayBackend,
  writeScriptBackend,
} from './test-helpers.ts';

const runtimeEnv = { HANGAR_NODE: process.execPath };

/** A home with the echo backend installed, a relay backend pointing at a shared echo server, and a supervisor. */
async function setUp(options: Partial<SupervisorOptions> = {}) {
  const home = makeHome();
  await writeEcho(join(home.backendsDir, 'echo'), '1.0.0');
  const upstream = await startUpstream(home.root);
  writeRelayBackend(join(home.backendsDir, 'relay'), upstream.address);
  const supervisors: Supervisor[] = [];
  /** A supervisor of its own for the test `t`, closed (stopping everything) once `t` ends, whatever its outcome. */
  const open = async (t: TestContext | null, more: Partial<SupervisorOptions> = {}) => {
    const supervisor = new Supervisor({ ...home, runtimeEnv, stopGraceMs: 1000, ...options, ...more });
    supervisors.push(supervisor);
    t?.after(() => supervisor.close({ stopAll: true }));
    await supervisor.start();
    return supervisor;
  };
  const supervisor = await open(null);
  const echo: BackendTarget = { name: 'echo', dir: join(home.backendsDir, 'echo') };
  const relay: BackendTarget = { name: 'relay', dir: join(home.backendsDir, 'relay') };
  const tearDown = async () => {
    await Promise.allSettled(supervisors.map((s) => s.close({ stopAll: true })));
    await upstream.stop();
    home.cleanup();
  };
  return { home, supervisor, open, echo, relay, upstream: upstream.address, tearDown };
}

/** Once `t` ends, whatever its outcome, the models it started on `supervisor` are stopped: no test leaves one to the next. */
function stopAfter(t: TestContext, supervisor: Supervisor, ...models: string[]): void {
  t.after(() => Promise.allSettled(models.map((model) => supervisor.stop(model, { force: true }))).then(() => undefined));
}

/** Kills `child` once `t` ends, if it still runs. */
function killAfter(t: TestContext, child: ChildProcess): void {
  t.after(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await once(child, 'exit');
  });
}

function nextEvent(supervisor: Supervisor, match: (view: ProcessView) => boolean, timeoutMs = 5000): Promise<ProcessView> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no matching process event')), timeoutMs);
    const listener = (view: ProcessView) => {
      if (!match(view)) return;
      clearTimeout(timer);
      supervisor.off('process', listener);
      resolve(view);
    };
    supervisor.on('process', listener);
  });
}

async function gone(pid: number, withinMs = 5000): Promise<boolean> {
  for (const end = Date.now() + withinMs; Date.now() < end; await delay(20)) if (!isAlive(pid)) return true;
  return false;
}

function readTable(stateDir: string): TableEntry[] {
  return (JSON.parse(readFileSync(join(stateDir, 'processes.json'), 'utf8')) as { processes: TableEntry[] }).processes;
}

function writeTable(stateDir: string, processes: TableEntry[]): void {
  writeFileSync(join(stateDir, 'processes.json'), JSON.stringify({ version: 1, processes }));
}

function flushTable(supervisor: Supervisor): Promise<void> {
  return (supervisor as unknown as { table: { flush(): Promise<void> } }).table.flush();
}

async function flushedTable(supervisor: Supervisor, stateDir: string): Promise<TableEntry[]> {
  await flushTable(supervisor);
  return readTable(stateDir);
}

function childStates(): string[] {
  const states: string[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const text = readFileSync(`/proc/${name}/stat`, 'latin1');
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === process.pid) states.push(fields[0]!);
    } catch {
      // exited meanwhile
    }
  }
  return states;
}

/**
 * The descriptors this process holds (fd → what it names), once the list has stopped changing: descriptors whose
 * close is still in flight (a gRPC channel, the pipes of a process that just exited, a table write) are gone.
 */
async function settledDescriptors(supervisor: Supervisor, withinMs = 10_000): Promise<Map<string, string>> {
  await flushTable(supervisor);
  const read = () => {
    const fds = new Map<string, string>();
    for (const fd of readdirSync('/proc/self/fd')) {
      try {
        fds.set(fd, readlinkSync(`/proc/self/fd/${fd}`));
      } catch {
        // the descriptor readdir used, or one closed meanwhile
      }
    }
    return fds;
  };
  const same = (a: Map<string, string>, b: Map<string, string>) => a.size === b.size && [...a].every(([fd, target]) => b.get(fd) === target);
  let last = read();
  let steady = 0;
  for (const end = Date.now() + withinMs; steady < 3 && Date.now() < end; ) {
    await delay(50);
    const now = read();
    steady = same(now, last) ? steady + 1 : 0;
    last = now;
  }
  return last;
}

/** What `now` holds that `base` did not: descriptors opened since, and still open. */
function openedSince(base: Map<string, string>, now: Map<string, string>): string[] {
  return [...now].filter(([fd, target]) => base.get(fd) !== target).map(([fd, target]) => `${fd} → ${target}`);
}

function pgidOf(pid: number): number | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    return null;
  }
}

describe('supervisor', { concurrency: false }, () => {
  let ctx: Awaited<ReturnType<typeof setUp>>;
  before(async () => {
    ctx = await setUp();
  });
  after(async () => {
    await ctx.tearDown();
  });

  test('records the directory identity at spawn and reuses an intact process', async (t) => {
    const { supervisor, echo, home } = ctx;
    stopAfter(t, supervisor, 'identity');
    const first = await supervisor.load(echo, 'identity');
    assert.equal(first.reused, false);
    assert.equal(first.message, 'loaded identity with echo 1.0.0');
    const st = statSync(echo.dir, { bigint: true });
    const entry = (await flushedTable(supervisor, home.stateDir)).find((e) => e.model === 'identity')!;
    assert.deepEqual([entry.pid, entry.dir, entry.dev, entry.ino], [first.pid, echo.dir, String(st.dev), String(st.ino)]);
    assert.equal(entry.startTime, (await currentPlatform().process(first.pid))!.startTime);
    assert.equal(await supervisor.matches(echo, 'identity'), true);
    const again = await supervisor.load(echo, 'identity');
    assert.deepEqual([again.pid, again.reused], [first.pid, true]);
    const view = supervisor.get('identity')!;
    assert.deepEqual([view.state, view.cwd, view.procCwd, view.dir], ['ready', 'ok', echo.dir, echo.dir]);
    await supervisor.stop('identity');
    assert.equal(supervisor.get('identity'), null);
    assert.equal(await gone(first.pid), true);
  });

  test('an out-of-band swap turns the process stale at once; the next load respawns into the new tree', async (t) => {
    const { supervisor, echo, home } = ctx;
    stopAfter(t, supervisor, 'swap');
    const before = await supervisor.load(echo, 'swap');
    const stale = nextEvent(supervisor, (v) => v.model === 'swap' && v.cwd === 'stale');
    // What the OS says the cwd is follows the stale event, which the recorded identity alone decides.
    const shown = nextEvent(supervisor, (v) => v.model === 'swap' && v.cwd === 'stale' && v.procCwd !== null);
    const swappedAt = performance.now();
    await swapOutOfBand(home.backendsDir, 'echo', (dir) => writeEcho(dir, '2.0.0'));
    const event = await stale;
    console.log(`stale event ${(performance.now() - swappedAt).toFixed(1)} ms after the swap began: ${event.cwdReason}`);
    assert.equal(event.pid, before.pid);
    assert.match((await shown).procCwd ?? '', /echo\.install-backup \(deleted\)$/);
    assert.equal(await supervisor.matches(echo, 'swap'), false);

    // The bug is real: asked directly, the stale process is healthy but cannot load.
    const direct = new BackendClient(`127.0.0.1:${before.port}`);
    assert.equal(await direct.health(2000), 'OK');
    await assert.rejects(direct.loadModel({ model: 'swap', modelFile: 'x', modelPath: 'y' }, 2000), /ENOENT/);
    direct.close();

    const after = await supervisor.load(echo, 'swap');
    assert.notEqual(after.pid, before.pid);
    assert.deepEqual([after.reused, after.message], [false, `respawned pid ${before.pid} → ${after.pid}: its directory was replaced; loaded swap with echo 2.0.0`]);
    assert.equal(await gone(before.pid), true);
    await supervisor.stop('swap');
  });

  test('gates 1 and 2: ensureRunning force-stops a process whose directory was replaced', async (t) => {
    const { supervisor, echo, home } = ctx;
    stopAfter(t, supervisor, 'gate');
    const first = await supervisor.ensureRunning(echo, 'gate');
    assert.equal(first.reused, false);
    assert.equal((await supervisor.ensureRunning(echo, 'gate')).reused, true);
    await swapOutOfBand(home.backendsDir, 'echo', (dir) => writeEcho(dir, '3.0.0'));
    assert.equal(await supervisor.matches(echo, 'gate'), false);
    const second = await supervisor.ensureRunning(echo, 'gate');
    assert.equal(second.reused, false);
    assert.notEqual(second.process.pid, first.process.pid);
    assert.equal(await gone(first.process.pid), true);
    // A target in another directory never matches, even with the same backend name.
    assert.equal(await supervisor.matches({ name: 'echo', dir: ctx.relay.dir }, 'gate'), false);
    await supervisor.stop('gate');
  });

  test('gate 3: a legacy table entry (no recorded directory) is adopted and accepted as intact', async (t) => {
    const { home, open, relay } = ctx;
    const stateDir = join(home.root, 'state-legacy');
    const owner = await open(t, { stateDir });
    const started = await owner.ensureRunning(relay, 'legacy');
    await owner.close({ stopAll: false });
    writeTable(stateDir, readTable(stateDir).map(({ model, backend, pid, port, startedAt, startTime }) => ({ model, backend, pid, port, startedAt, startTime })));

    const heir = await open(t, { stateDir });
    const view = heir.get('legacy')!;
    assert.deepEqual([view.pid, view.dir, view.cwd], [started.process.pid, '', 'ok']);
    assert.equal(await heir.matches(relay, 'legacy'), true);
    const reuse = await heir.ensureRunning(relay, 'legacy');
    assert.deepEqual([reuse.reused, reuse.process.pid], [true, started.process.pid]);
    // Stopped by the directory its cwd is in, although nothing about its directory was recorded.
    assert.deepEqual((await heir.stopByDirectory(relay.dir)).stopped, [{ model: 'legacy', backend: 'relay' }]);
    assert.equal(await gone(started.process.pid), true);
    await heir.close({ stopAll: true });
  });

  test('stopByDirectory selects by recorded identity, never by name; strangers in the directory are left running and reported unless the user opts in', async (t) => {
    const { supervisor, relay, echo, home } = ctx;
    stopAfter(t, supervisor, 'unnamed', 'misnamed', 'elsewhere', 'again');
    const unnamed = await supervisor.ensureRunning({ name: '', dir: relay.dir }, 'unnamed');
    const misnamed = await supervisor.ensureRunning({ name: 'echo', dir: relay.dir }, 'misnamed');
    const elsewhere = await supervisor.ensureRunning({ name: 'relay', dir: echo.dir }, 'elsewhere');
    const stranger = spawn('sleep', ['300'], { cwd: relay.dir, stdio: 'ignore' });
    killAfter(t, stranger);
    await once(stranger, 'spawn');

    const scan = await supervisor.scan();
    const seen = scan.find((e) => e.pid === stranger.pid);
    assert.deepEqual(
      seen && [seen.supervised, seen.backend, seen.status, seen.cwd, seen.command],
      [false, 'relay', 'ok', relay.dir, 'sleep 300'],
    );
    assert.equal(scan.find((e) => e.pid === unnamed.process.pid)?.supervised, true);

    const { stopped, leftRunning } = await supervisor.stopByDirectory(relay.dir);
    assert.deepEqual(
      stopped.sort((a, b) => a.model.localeCompare(b.model)),
      [
        { model: 'misnamed', backend: 'echo' },
        { model: 'unnamed', backend: '' },
      ],
    );
    assert.equal(await gone(unnamed.process.pid), true);
    assert.equal(await gone(misnamed.process.pid), true);
    assert.deepEqual(leftRunning, [{ pid: stranger.pid, command: 'sleep 300' }]);
    assert.equal(isAlive(stranger.pid!), true, 'a process Hangar did not start is left running');
    assert.equal(supervisor.get('elsewhere')?.pid, elsewhere.process.pid, 'a process in another directory keeps running');
    assert.deepEqual([...(await processesInDirectory(currentPlatform(), relay.dir, null))], [stranger.pid]);

    assert.deepEqual(await supervisor.stopByDirectory(relay.dir, { stopUnsupervised: true }), { stopped: [], leftRunning: [] });
    assert.equal(await gone(stranger.pid!), true, 'stopped when the user says so');
    assert.deepEqual([...(await processesInDirectory(currentPlatform(), relay.dir, null))], []);

    // Gate 5: after the swap, respawn what ran from the new live directory.
    await swapOutOfBand(home.backendsDir, 'relay', (dir) => writeRelayBackend(dir, ctx.upstream));
    const respawned = await supervisor.respawnAll([{ model: 'again', backend: 'relay' }]);
    assert.deepEqual([respawned[0]!.state, respawned[0]!.dir, respawned[0]!.cwd], ['ready', relay.dir, 'ok']);
    await supervisor.stop('again');
    await supervisor.stop('elsewhere');
  });

  test('a stale unsupervised process is reported by scan with supervised: false', async (t) => {
    const { supervisor, home } = ctx;
    const dir = join(home.backendsDir, 'sleeper');
    writeScriptBackend(dir, 'exec sleep 300');
    const stranger = spawn('sleep', ['300'], { cwd: dir, stdio: 'ignore' });
    killAfter(t, stranger);
    await once(stranger, 'spawn');
    await swapOutOfBand(home.backendsDir, 'sleeper', (staged) => writeScriptBackend(staged, 'exec sleep 300'));
    const seen = (await supervisor.scan()).find((e) => e.pid === stranger.pid);
    assert.deepEqual(seen && [seen.supervised, seen.backend, seen.status], [false, 'sleeper', 'stale']);
    assert.match(seen!.cwd, /sleeper\.install-backup \(deleted\)$/);
  });

  test('ports come from the range, skip ports in use, and rest in quarantine after release', async (t) => {
    const busy = (await import('node:net')).createServer();
    await new Promise<void>((resolve) => busy.listen(29540, '127.0.0.1', resolve));
    const pool = new PortPool([29540, 29542], 300);
    t.after(() => {
      pool.close();
      busy.close();
    });
    const a = await pool.allocate();
    const b = await pool.allocate();
    assert.deepEqual([a, b], [29541, 29542], 'the port in use is skipped');
    pool.release(a);
    await assert.rejects(pool.allocate(), /no free port in 29540-29542/);
    await delay(350);
    assert.equal(await pool.allocate(), 29541, 'back after the quarantine');

    const { supervisor, relay } = ctx;
    stopAfter(t, supervisor, 'ports');
    // Policy never: a first quick crash would be restarted at once (as PM2 does), and take its port back itself.
    const first = await supervisor.load(relay, 'ports', { restart: 'never' });
    {
      const second = await supervisor.respawn('ports');
      assert.equal(second.port, first.port, 'a respawn takes its own port back, so a pinned client keeps working');
      const third = await supervisor.respawn('ports');
      assert.equal(third.port, first.port);
      // The process crashes and someone takes its port before the user starts it again: it moves, and says so.
      const crashed = nextEvent(supervisor, (v) => v.model === 'ports' && v.state === 'crashed');
      process.kill(third.pid, 'SIGKILL');
      await crashed;
      // Another host on this machine may have taken the released port first: that is the same situation.
      const squatter = (await import('node:net')).createServer();
      t.after(() => void squatter.close());
      await new Promise<void>((resolve) => squatter.once('error', () => resolve()).listen(third.port, '127.0.0.1', resolve));
      const fourth = await supervisor.restart('ports');
      assert.notEqual(fourth.port, third.port);
      assert.equal(
        fourth.message,
        `restarted by the user (pid ${third.pid} was killed by SIGKILL) → pid ${fourth.pid}; moved from port ${third.port} to ${fourth.port}: ${third.port} is in use`,
      );
    }
  });

  test('a backend that dies during startup gives an error with its stderr tail', async (t) => {
    const { supervisor, home } = ctx;
    stopAfter(t, supervisor, 'doomed');
    const dir = join(home.backendsDir, 'broken');
    writeScriptBackend(dir, 'echo "loading weights" >&2\necho "fatal: libcuda.so.1 not found" >&2\nexit 3');
    await assert.rejects(supervisor.load({ name: 'broken', dir }, 'doomed'), (err: Error) => {
      assert.equal(err.name, 'HangarError');
      assert.equal(
        err.message,
        'backend broken exited while starting for model doomed (exit code 3): loading weights | fatal: libcuda.so.1 not found',
      );
      return true;
    });
    assert.equal(supervisor.get('doomed'), null);
  });

  test('a backend that says its port was taken is started again on another port, though the port is free by then', async (t) => {
    const { supervisor, home, upstream } = ctx;
    stopAfter(t, supervisor, 'clashed');
    const dir = join(home.backendsDir, 'clashed');
    writeRelayBackend(dir, upstream);
    // The first start loses its port to a short-lived clash that is over by the time anyone looks.
    writeScriptBackend(dir, `if [ ! -e "$(dirname "$0")/clashed-once" ]; then touch "$(dirname "$0")/clashed-once"; echo "listen tcp: bind: address already in use" >&2; exit 1; fi\nRELAY_UPSTREAM=${upstream} exec perl "$(dirname "$0")/relay.pl" "$@"`);
    const loaded = await supervisor.ensureRunning({ name: 'clashed', dir }, 'clashed');
    assert.equal(loaded.process.state, 'ready');
    await supervisor.stop('clashed');
  });

  test('a backend that never answers Health is stopped at the start timeout', async (t) => {
    const { open, home } = ctx;
    const supervisor = await open(t, { startTimeoutMs: 1000, stateDir: join(home.root, 'state-timeout') });
    const dir = join(home.backendsDir, 'mute');
    writeScriptBackend(dir, 'exec sleep 300');
    let pid = 0;
    supervisor.on('process', (v) => void (pid ||= v.pid));
    await assert.rejects(supervisor.ensureRunning({ name: 'mute', dir }, 'silent'), /^HangarError: backend mute did not become ready for model silent within 1s: port \d+ never accepted a connection$/);
    assert.equal(await gone(pid), true);
    assert.equal(supervisor.get('silent'), null);
  });

  test('the log ring keeps the last 1000 lines and streams each as a log event', async (t) => {
    const ring = new LogRing(3);
    for (const text of ['a', 'b', 'c', 'd', 'e']) ring.push({ model: 'm', stream: 'stdout', text, at: '' });
    assert.deepEqual(ring.toArray().map((l) => l.text), ['c', 'd', 'e']);

    const { supervisor, home } = ctx;
    stopAfter(t, supervisor, 'chatty');
    const dir = join(home.backendsDir, 'chatty');
    writeRelayBackend(dir, ctx.upstream);
    writeScriptBackend(dir, `i=0; while [ $i -lt 1500 ]; do echo "line $i"; i=$((i+1)); done\nRELAY_UPSTREAM=${ctx.upstream} exec perl "${dir}/relay.pl" "$@"`);
    let streamed = 0;
    const count = (line: { model: string }) => void (line.model === 'chatty' && streamed++);
    supervisor.on('log', count);
    await supervisor.ensureRunning({ name: 'chatty', dir }, 'chatty');
    supervisor.off('log', count);
    const lines = await supervisor.logs('chatty');
    assert.equal(lines.length, 1000);
    // The backend's own stderr (a warning, say) shares the ring: the script's lines are its newest, in one run.
    const script = lines.filter((l) => l.stream === 'stdout' && /^line \d+$/.test(l.text)).map((l) => l.text);
    const others = lines.filter((l) => !script.includes(l.text)).map((l) => `${l.stream}: ${l.text}`);
    assert.ok(others.length <= 5, `lines not from the script: ${others.join(' | ')}`);
    assert.deepEqual([script[0], script.at(-1)], [`line ${1500 - script.length}`, 'line 1499'], others.join(' | '));
    assert.equal(streamed, 1500);
    await supervisor.stop('chatty');
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
    const host = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'testdata/host.ts'), mode, JSON.stringify(options), JSON.stringify(relay)], {
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
    const live = new Set<number>();
    let most = 0;
    const track = (v: ProcessView) => {
      if (v.model !== 'busy') return;
      if (v.state === 'exited') live.delete(v.pid);
      else live.add(v.pid);
      most = Math.max(most, live.size);
    };
    supervisor.on('process', track);
    await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? supervisor.load(relay, 'busy') : supervisor.respawn('busy'))));
    supervisor.off('process', track);
    assert.equal(most, 1, 'two processes for one model were alive at once');
    const [only] = supervisor.list().filter((v) => v.model === 'busy');
    assert.equal(live.size, 1);
    assert.equal(only?.pid, [...live][0]);
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
