// The supervisor: directory identity recorded at spawn and its gates, stops by identity, the scan, ports, starts that
// fail, and logs. Its cases across the host's life are supervisor-lifetime.test.ts.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BackendClient } from './grpc-client.ts';
import { currentPlatform } from '../platform/index.ts';
import { isAlive } from './identity.ts';
import { LogRing } from './log-ring.ts';
import { PortPool } from './ports.ts';
import { processesInDirectory } from './scan.ts';
import { swapOutOfBand, writeEcho, writeRelayBackend, writeScriptBackend } from './test-helpers.ts';
import { flushedTable, gone, killAfter, nextEvent, readTable, setUp, stopAfter, writeTable } from '../testing/supervisor-setup.ts';

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

    assert.deepEqual(await supervisor.stopByDirectory(relay.dir, { stopUnsupervised: true }), {
      stopped: [],
      leftRunning: [],
      stoppedUnsupervised: [{ pid: stranger.pid, command: 'sleep 300' }],
    });
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

  test('a process that hung and was then killed says how it ended, not that it hung', async (t) => {
    const { open, echo, home } = ctx;
    const supervisor = await open(t, { healthEveryMs: 100, healthTimeoutMs: 200, stateDir: join(home.root, 'state-hung-killed') });
    const loaded = await supervisor.load(echo, 'hung-killed', { restart: 'never' });
    const hung = nextEvent(supervisor, (v) => v.model === 'hung-killed' && v.state === 'unresponsive');
    process.kill(loaded.pid, 'SIGSTOP');
    assert.equal((await hung).error, 'no Health answer within 200 ms');
    const crashed = nextEvent(supervisor, (v) => v.model === 'hung-killed' && v.state === 'crashed');
    process.kill(loaded.pid, 'SIGKILL');
    const ended = await crashed;
    assert.deepEqual([ended.error, ended.exit?.signal], [null, 'SIGKILL'], 'its end is its note now');
    await supervisor.stop('hung-killed');
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
});
