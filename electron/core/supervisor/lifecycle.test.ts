// A process's life as the supervisor tells it, on real echo backends: models loaded again after every new process,
// crashes kept visible, restart policies, unresponsive backends, and logs on disk across processes.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { ProcessView } from '../../../shared/index.ts';
import { currentPlatform } from '../platform/index.ts';
import { BackendClient } from './grpc-client.ts';
import { isAlive } from './identity.ts';
import { processesInDirectory } from './scan.ts';
import { systemClock } from './restart-policy.ts';
import { Supervisor, type BackendTarget, type SupervisorOptions } from './supervisor.ts';
import { makeHome, swapOutOfBand, writeEcho, type Home } from './test-helpers.ts';
import { nextEvent } from '../testing/supervisor-setup.ts';
import { portsFor } from '../testing/test-ports.ts';

const runtimeEnv = { HANGAR_NODE: process.execPath };
// Ranges of its own, below the ephemeral ports (no other test file uses 292xx or 288xx).
const PORTS = portsFor([29200, 29279], [28800, 28879]);
// The hosts of the test that checks a model comes back on its port: the other tests' hosts still run meanwhile, and
// restart what they watch, so they must not be able to take a port it left.
const RESTORE_PORTS = portsFor([29280, 29299], [28880, 28899]);

let home: Home;
let echo: BackendTarget;
const open: Supervisor[] = [];

async function supervisor(options: Partial<SupervisorOptions> = {}): Promise<Supervisor> {
  const s = new Supervisor({ ...home, runtimeEnv, stopGraceMs: 1000, portRange: PORTS, ...options });
  open.push(s);
  await s.start();
  return s;
}

function events(s: Supervisor, model: string): ProcessView[] {
  const seen: ProcessView[] = [];
  s.on('process', (v: ProcessView) => v.model === model && seen.push(v));
  return seen;
}

/** The next process event `match` takes, within 10 s: a crash, a restart and a load may come one after another. */
const until = (s: Supervisor, match: (v: ProcessView) => boolean) => nextEvent(s, match, 10_000);

async function statusOf(port: number): Promise<string> {
  const client = new BackendClient(`127.0.0.1:${port}`);
  try {
    return (await client.status(2000)).state;
  } finally {
    client.close();
  }
}

describe('process lifecycle', { concurrency: false }, () => {
  before(async () => {
    home = makeHome();
    echo = { name: 'echo', dir: join(home.backendsDir, 'echo') };
    await writeEcho(echo.dir, '1.0.0');
  });
  after(async () => {
    await Promise.allSettled(open.map((s) => s.close({ stopAll: true })));
    home.cleanup();
  });

  test('a respawn loads the model again: loading, then ready, and the backend says READY', async () => {
    const s = await supervisor();
    const seen = events(s, 'reload');
    // As viewers show a state: a process that answers without its model is idle, which a process whose load follows never is.
    const shown = (pid: number) => seen.filter((v) => v.pid === pid).map((v) => (v.state === 'ready' && !v.loaded ? 'idle' : v.state));
    const first = await s.load(echo, 'reload');
    assert.equal(await statusOf(first.port), 'READY');
    assert.deepEqual(shown(first.pid), ['starting', 'loading', 'ready']);
    const respawned = await s.respawn('reload');
    assert.notEqual(respawned.pid, first.pid);
    assert.deepEqual([respawned.state, respawned.loaded, respawned.error], ['ready', true, null]);
    assert.equal(await statusOf(respawned.port), 'READY', 'the new process has the model loaded');
    assert.deepEqual(shown(respawned.pid), ['starting', 'loading', 'ready']);
    assert.equal(respawned.restarts, 1);

    // A reinstall respawns it from the new tree, model loaded again.
    const stopped = await s.stopByDirectory(echo.dir);
    await swapOutOfBand(home.backendsDir, 'echo', (dir) => writeEcho(dir, '1.0.1'));
    const [again] = await s.respawnAll(stopped.stopped);
    assert.deepEqual([again!.state, again!.loaded], ['ready', true]);
    assert.equal(await statusOf(again!.port), 'READY');
    // Stopped by Hangar (for the respawn, then for the swap), each reads stopping until its row goes, never exited.
    for (const pid of [first.pid, respawned.pid]) assert.deepEqual([...new Set(shown(pid))], ['starting', 'loading', 'ready', 'stopping'], `pid ${pid}`);

    // A reload that fails says so on the row, with the backend's error.
    rmSync(join(echo.dir, 'VERSION'));
    try {
      const broken = await s.respawn('reload');
      assert.equal(broken.loaded, false);
      assert.match(broken.error ?? '', /^reloading model reload failed: backend echo could not load model reload: ENOENT/);
      assert.equal(s.get('reload')?.error, broken.error);
    } finally {
      await writeEcho(echo.dir, '1.0.1');
    }
    await s.stop('reload');
  });

  test('whether the model is loaded comes from the backend: a Free behind Hangar\'s back shows on the row', async () => {
    const s = await supervisor({ healthEveryMs: 200 });
    const loaded = await s.load(echo, 'truth');
    assert.equal(s.get('truth')?.loaded, true);
    const unloaded = until(s, (v) => v.model === 'truth' && !v.loaded);
    const client = new BackendClient(`127.0.0.1:${loaded.port}`);
    await client.free(2000);
    client.close();
    const view = await unloaded;
    assert.deepEqual([view.state, view.error], ['ready', 'the backend reports no model loaded (Status UNINITIALIZED)']);
    await s.stop('truth');
  });

  test('a load that replaces a stale process says which pid replaced which, and why', async () => {
    const s = await supervisor();
    const first = await s.load(echo, 'stale');
    await swapOutOfBand(home.backendsDir, 'echo', (dir) => writeEcho(dir, '1.0.2'));
    await s.recheck();
    assert.equal(s.get('stale')?.state, 'stale');
    const second = await s.load(echo, 'stale');
    assert.equal(second.message, `respawned pid ${first.pid} → ${second.pid}: its directory was replaced; loaded stale with echo 1.0.2`);
    await s.stop('stale');
  });

  test('kill -9 keeps the row as crashed with the signal, time and stderr tail; restart brings it back loaded; stop removes it', async () => {
    const s = await supervisor();
    const loaded = await s.load(echo, 'crash', { restart: 'never' });
    const crashed = until(s, (v) => v.model === 'crash' && v.state === 'crashed');
    process.kill(loaded.pid, 'SIGKILL');
    const row = await crashed;
    await new Promise((r) => setTimeout(r, 300));
    const kept = s.get('crash')!;
    assert.equal(kept.state, 'crashed', 'the row stays');
    assert.deepEqual([kept.exit?.code, kept.exit?.signal, kept.loaded], [null, 'SIGKILL', false]);
    assert.ok(Date.now() - Date.parse(kept.exit!.at) < 5000);
    assert.deepEqual(kept.exit!.tail, ['echo: listening on 127.0.0.1:' + loaded.port]);
    assert.equal(row.pid, loaded.pid);

    const restarted = await s.restart('crash');
    assert.notEqual(restarted.pid, loaded.pid);
    assert.deepEqual([restarted.state, restarted.loaded, restarted.exit], ['ready', true, null]);
    assert.equal(await statusOf(restarted.port), 'READY');

    // A clean exit (SIGTERM from someone else: echo exits 0) reads exited.
    const exited = until(s, (v) => v.model === 'crash' && v.state === 'exited');
    process.kill(restarted.pid, 'SIGTERM');
    assert.deepEqual((await exited).exit?.code, 0);

    const removed = new Promise((resolve) => s.once('process-removed', resolve));
    await s.stop('crash');
    assert.equal(await removed, 'crash');
    assert.equal(s.get('crash'), null);
  });

  test('on-failure restarts a crash with backoff and reloads; five crashes in a row soon after their start leave it crash-looping', async () => {
    const s = await supervisor({ restartRules: { baseMs: 50, maxMs: 400, loopLimit: 5 } });
    const first = await s.load(echo, 'loop');
    assert.equal(s.get('loop')?.policy, 'on-failure');
    let pid = first.pid;
    for (let crash = 1; crash <= 4; crash++) {
      const back = until(s, (v) => v.model === 'loop' && v.state === 'ready' && v.loaded && v.pid !== pid);
      const started = Date.now();
      process.kill(pid, 'SIGKILL');
      const view = await back;
      // The first two quick ends restart at once, as PM2; the next wait 50, 100 ms.
      if (crash > 2) assert.ok(Date.now() - started >= 50 * 2 ** (crash - 3) * 0.9, `backoff ${crash}`);
      assert.equal(view.restarts, crash);
      assert.equal(await statusOf(view.port), 'READY');
      pid = view.pid;
    }
    const looping = until(s, (v) => v.model === 'loop' && v.state === 'crash-looping');
    process.kill(pid, 'SIGKILL');
    const view = await looping;
    assert.equal(view.error, 'ended 5 times in a row within 10 s of its start: left stopped (last: was killed by SIGKILL)');
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(s.get('loop')?.state, 'crash-looping', 'not restarted again');
    const cleared = await s.restart('loop');
    assert.equal(cleared.state, 'ready');
    await s.stop('loop');
  });

  test('a crash after a run that lasted restarts at once, and so do the first two right after; the third in a row waits the model\'s own delay', async () => {
    // quickMs is well over what a start takes on a loaded machine, so the second process is killed within it.
    // The first process's run lasts past quickMs on a clock the test moves on, not by a wait.
    let lasted = 0;
    const restartClock = { ...systemClock, now: () => Date.now() + lasted };
    const s = await supervisor({ restartRules: { baseMs: 5000, maxMs: 5000, quickMs: 4000, loopLimit: 5 }, restartClock });
    const first = await s.load(echo, 'steady', { restartDelayMs: 700 });
    assert.deepEqual([s.get('steady')?.restartDelayMs, s.get('steady')?.maxRestarts], [700, 5]);
    lasted = 4100;
    let crashed = until(s, (v) => v.model === 'steady' && v.state === 'crashed');
    let back = until(s, (v) => v.model === 'steady' && v.state === 'ready' && v.pid !== first.pid);
    process.kill(first.pid, 'SIGKILL');
    assert.equal((await crashed).message, 'restarting (policy on-failure)', 'no wait after a run that lasted');
    lasted = 0;
    const again = await back;
    crashed = until(s, (v) => v.model === 'steady' && v.state === 'crashed');
    back = until(s, (v) => v.model === 'steady' && v.state === 'ready' && v.pid !== again.pid);
    process.kill(again.pid, 'SIGKILL');
    assert.equal((await crashed).message, 'restarting (policy on-failure)', 'one quick end: at once, as PM2');
    const second = await back;
    crashed = until(s, (v) => v.model === 'steady' && v.state === 'crashed');
    back = until(s, (v) => v.model === 'steady' && v.state === 'ready' && v.pid !== second.pid);
    process.kill(second.pid, 'SIGKILL');
    assert.equal((await crashed).message, 'restarting (policy on-failure)', 'two quick ends in a row: at once too, as PM2');
    const third = await back;
    crashed = until(s, (v) => v.model === 'steady' && v.state === 'crashed');
    back = until(s, (v) => v.model === 'steady' && v.state === 'ready' && v.pid !== third.pid);
    const started = Date.now();
    process.kill(third.pid, 'SIGKILL');
    assert.equal((await crashed).message, 'restarting in 700 ms (policy on-failure; it ended within 4 s of its start)');
    await back;
    assert.ok(Date.now() - started >= 700 * 0.9, `waited the model's delay (${Date.now() - started} ms)`);
    await s.stop('steady');
  });

  test('policy "never" leaves a crash stopped; "always" restarts a clean exit too', async () => {
    const s = await supervisor({ restartRules: { baseMs: 50, maxMs: 400, loopLimit: 5 } });
    const never = await s.load(echo, 'never', { restart: 'never' });
    process.kill(never.pid, 'SIGKILL');
    await until(s, (v) => v.model === 'never' && v.state === 'crashed');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(s.get('never')?.pid, never.pid);
    const always = await s.load(echo, 'always', { restart: 'always' });
    const back = until(s, (v) => v.model === 'always' && v.state === 'ready' && v.loaded && v.pid !== always.pid);
    process.kill(always.pid, 'SIGTERM');
    assert.equal((await back).restarts, 1);
    await s.stop('never');
    await s.stop('always');
  });

  test('policy and load persist: a host that comes back finds its backend gone and starts it again, loaded', async () => {
    const stateDir = join(home.root, 'state-resurrect');
    const owner = await supervisor({ stateDir });
    const loaded = await owner.load(echo, 'persist', { restart: 'on-failure' });
    await owner.close({ stopAll: false });
    const table = JSON.parse(readFileSync(join(stateDir, 'processes.json'), 'utf8')) as { processes: Array<Record<string, unknown>> };
    assert.deepEqual(table.processes.map((e) => [e.model, e.policy, (e.load as { model: string }).model]), [['persist', 'on-failure', 'persist']]);
    process.kill(-loaded.pid, 'SIGKILL');
    for (let i = 0; i < 100 && isAlive(loaded.pid); i++) await new Promise((r) => setTimeout(r, 20));

    const heir = await supervisor({ stateDir });
    const isBack = (v: ProcessView | null) => v?.model === 'persist' && v.state === 'ready' && v.loaded;
    const current = heir.get('persist');
    const back = isBack(current) ? current! : await until(heir, isBack);
    assert.notEqual(back.pid, loaded.pid);
    // Its port again; should the OS still hold it at that instant, the move is said (supervisor.test.ts pins reuse).
    const moved = back.port === loaded.port ? '' : `; moved from port ${loaded.port} to ${back.port}: ${loaded.port} is in use`;
    assert.equal(back.message, `started again: pid ${loaded.pid} ended while Hangar was not running${moved}`);
    assert.equal(await statusOf(back.port), 'READY');
    await heir.stop('persist');
  });

  test('a load, a start and a stop are on disk when they return: a host that dies right after starts again what ran, never what was stopped', async () => {
    const stateDir = join(home.root, 'state-at-once');
    const s = await supervisor({ stateDir });
    const saved = () => JSON.parse(readFileSync(join(stateDir, 'processes.json'), 'utf8')) as { processes: Array<{ model: string; pid: number }>; models: Array<{ model: string; load?: { model: string } }> };
    const loaded = await s.load(echo, 'at-once', { restart: 'always' });
    assert.deepEqual(saved().processes.map((p) => p.model), ['at-once']);
    assert.deepEqual(saved().models.map((m) => [m.model, m.load?.model]), [['at-once', 'at-once']]);
    const started = await s.ensureRunning(echo, 'bare-at-once');
    assert.deepEqual(saved().processes.map((p) => [p.model, p.pid]), [['at-once', loaded.pid], ['bare-at-once', started.process.pid]]);
    await s.stop('at-once');
    await s.stop('bare-at-once');
    assert.equal(isAlive(loaded.pid), false);
    assert.deepEqual([saved().processes, saved().models], [[], []]);
  });

  test('start backends on launch: what ran when the host closed (and stopped it) starts again, loaded, on its port', async () => {
    const stateDir = join(home.root, 'state-launch');
    const owner = await supervisor({ stateDir, portRange: RESTORE_PORTS });
    const loaded = await owner.load(echo, 'launch', { restart: 'always' });
    await owner.ensureRunning(echo, 'bare');
    const gone = await owner.load(echo, 'gone');
    await owner.stop('gone');
    await owner.close({ stopAll: true });
    assert.equal(isAlive(loaded.pid), false);
    assert.equal(isAlive(gone.pid), false);

    const plain = await supervisor({ stateDir, portRange: RESTORE_PORTS });
    assert.deepEqual(plain.list(), [], 'without the setting nothing starts');
    await plain.close({ stopAll: true });

    const heir = await supervisor({ stateDir, restoreOnStart: true, portRange: RESTORE_PORTS });
    const isBack = (v: ProcessView | null) => v?.model === 'launch' && v.state === 'ready' && v.loaded;
    const current = heir.get('launch');
    const back = isBack(current) ? current! : await until(heir, isBack);
    assert.deepEqual([back.policy, back.message], ['always', 'started again on launch']);
    assert.equal(await statusOf(back.port), 'READY');
    const bare = heir.get('bare') ?? (await until(heir, (v) => v.model === 'bare' && v.state === 'ready'));
    assert.equal(bare.loaded, false, 'a process that had no model loaded comes back without one');
    assert.equal(heir.get('gone'), null, 'what the user stopped stays stopped');
    await heir.stop('launch');
    await heir.stop('bare');
  });

  test('a SIGSTOPped backend turns unresponsive and back; stop still ends it within the grace period', async () => {
    const s = await supervisor({ healthEveryMs: 200, healthTimeoutMs: 300 });
    const loading = Date.now();
    const loaded = await s.load(echo, 'hung');
    // A replacement is the grace period and a start like this one: on a loaded machine, both take longer.
    const replaceLimit = Math.max(4000, 1000 + 3 * (Date.now() - loading));
    const hung = until(s, (v) => v.model === 'hung' && v.state === 'unresponsive');
    process.kill(loaded.pid, 'SIGSTOP');
    assert.equal((await hung).error, 'no Health answer within 300 ms');
    const woke = until(s, (v) => v.model === 'hung' && v.state === 'ready');
    process.kill(loaded.pid, 'SIGCONT');
    assert.equal((await woke).error, null);

    // A load does not wait on a hung process: it replaces it.
    process.kill(loaded.pid, 'SIGSTOP');
    await until(s, (v) => v.model === 'hung' && v.state === 'unresponsive');
    const started = Date.now();
    const replaced = await s.load(echo, 'hung');
    assert.ok(Date.now() - started < replaceLimit, `load took ${Date.now() - started} ms (limit ${replaceLimit} ms)`);
    const version = readFileSync(join(echo.dir, 'VERSION'), 'utf8').trim();
    assert.equal(replaced.message, `respawned pid ${loaded.pid} → ${replaced.pid}: it was unresponsive; loaded hung with echo ${version}`);

    process.kill(replaced.pid, 'SIGSTOP');
    await until(s, (v) => v.model === 'hung' && v.state === 'unresponsive');
    const stopAt = Date.now();
    await s.stop('hung');
    assert.ok(Date.now() - stopAt < 2500, `stop took ${Date.now() - stopAt} ms`);
    assert.equal(isAlive(replaced.pid), false);
  });

  test('logs live on disk per model, timestamped, across respawns and crashes, with a separator per start; rotated', async () => {
    const logsDir = join(home.root, 'logs-rotate');
    const s = await supervisor({ logsDir, logMaxBytes: 1000, restartRules: { baseMs: 50, maxMs: 400, loopLimit: 5 } });
    const first = await s.load(echo, 'logged', { restart: 'never' });
    const second = await s.respawn('logged');
    process.kill(second.pid, 'SIGKILL');
    await until(s, (v) => v.model === 'logged' && v.state === 'crashed');
    const lines = await s.logs('logged');
    const texts = lines.map((l) => l.text);
    assert.deepEqual(texts.filter((t) => t.startsWith('-----')), [
      `----- start: pid ${first.pid}, backend echo, port ${first.port} -----`,
      `----- pid ${first.pid} stopped by Hangar -----`,
      `----- respawn: pid ${second.pid}, backend echo, port ${second.port} -----`,
      `----- pid ${second.pid} was killed by SIGKILL -----`,
    ]);
    assert.ok(texts.includes(`echo: listening on 127.0.0.1:${second.port}`));
    for (const line of lines) assert.match(line.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const file = join(logsDir, 'logged.log');
    assert.match(readFileSync(file, 'utf8'), /^\d{4}-\d\d-\d\dT\S+ ----- start: pid \d+/);

    // About 200 bytes a start: rotated more than once, so the oldest file was dropped.
    for (let i = 0; i < 12; i++) await s.restart('logged');
    await s.stop('logged');
    await s.close({ stopAll: true });
    assert.ok(existsSync(`${file}.1`), 'one older file kept');
    assert.ok(!existsSync(`${file}.2`));
    assert.ok(statSync(file).size <= 1000 && statSync(`${file}.1`).size <= 1000);
    const kept = readFileSync(`${file}.1`, 'utf8') + readFileSync(file, 'utf8');
    assert.ok(!kept.includes(`start: pid ${first.pid},`), 'the first start went with the oldest file');
  });

  test('a log file that cannot be written (full disk) warns once and the backend runs on', async () => {
    const logsDir = join(home.root, 'logs-full');
    const s = await supervisor({ logsDir });
    const warnings: string[] = [];
    s.on('log', (l: { text: string }) => l.text.startsWith('[hangar] cannot write') && warnings.push(l.text));
    (await import('node:fs')).mkdirSync(logsDir, { recursive: true });
    symlinkSync('/dev/full', join(logsDir, 'full.log'));
    const loaded = await s.load(echo, 'full');
    await s.respawn('full');
    const again = await s.load(echo, 'full');
    assert.equal(again.reused, true);
    assert.match(loaded.message, /^loaded full with echo/);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /^\[hangar\] cannot write the log file of full \(ENOSPC/);
    await s.stop('full');
  });

  test('close({ stopAll }) also stops a restart caught between two processes', async () => {
    // A backend whose next start says its port was taken: the restart's first process dies and a second one starts
    // on another port. The host closes in between, while the model has no row.
    const dir = join(home.backendsDir, 'flaky');
    await writeEcho(dir, '1.0.0');
    renameSync(join(dir, 'run.sh'), join(dir, 'echo-run.sh'));
    writeFileSync(join(dir, 'run.sh'), [
      '#!/bin/sh',
      'DIR=$(cd -- "$(dirname -- "$0")" && pwd) || exit 1',
      'if [ -e "$DIR/fail-once" ]; then rm "$DIR/fail-once"; echo "bind() failed: address already in use" >&2; exit 1; fi',
      'exec "$DIR/echo-run.sh" "$@"',
      '',
    ].join('\n'));
    chmodSync(join(dir, 'run.sh'), 0o755);
    const s = await supervisor({ stateDir: join(home.root, 'state-between'), restartRules: { baseMs: 10, maxMs: 10, loopLimit: 5 } });
    const { process: first } = await s.ensureRunning({ name: 'flaky', dir }, 'between');
    writeFileSync(join(dir, 'fail-once'), '');
    const closed = new Promise<void>((resolve, reject) => s.once('process-removed', () => s.close({ stopAll: true }).then(resolve, reject)));
    process.kill(first.pid, 'SIGKILL');
    await closed;
    assert.equal(existsSync(join(dir, 'fail-once')), false, 'the restart began before the host closed');
    // A restart the close missed would bring its second process up shortly after.
    await delay(1000);
    const left = [...(await processesInDirectory(currentPlatform(), dir, null))];
    for (const pid of left) process.kill(pid, 'SIGKILL');
    assert.deepEqual(left, [], 'nothing runs from the backend after the close');
  });
});
