// A backend's processes are its cgroup (where the machine allows one), its process group, its session and every
// descendant, setsid children included: a stop, a swap, a closing host and the reaper of a killed host all reach
// them. Real processes; backend ports 29580-29599, 28980-28999 under posix (and the default range, reserved machine-wide).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { currentPlatform } from '../platform/index.ts';
import { cgroupOf } from './cgroups.ts';
import { isAlive, procStat } from './identity.ts';
import { Supervisor, type BackendTarget } from './supervisor.ts';
import { makeHome, startUpstream, type EchoServer, swapOutOfBand, writeRelayBackend, writeScriptBackend } from './test-helpers.ts';
import { portsFor } from '../testing/test-ports.ts';
import { TS_NODE } from '../testing/ts-node.ts';

const runtimeEnv = { HANGAR_NODE: process.execPath };

async function gone(pid: number, withinMs = 5000): Promise<boolean> {
  for (const end = Date.now() + withinMs; Date.now() < end; await delay(20)) if (!isAlive(pid)) return true;
  return false;
}

/** The pid a backend's setsid child wrote, once it is there. */
async function grandchild(pidFile: string): Promise<number> {
  for (let i = 0; i < 250 && !existsSync(pidFile); i++) await delay(20);
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  assert.ok(isAlive(pid), 'the setsid child runs');
  return pid;
}

/** Whether the pid is still in the process table, a zombie included: what `ps` and `kill -0` see. */
function listed(pid: number): boolean {
  return procStat(pid) !== null;
}

/** The session id (field 6 of /proc/PID/stat). */
function sessionOf(pid: number): number {
  return procStat(pid)!.session;
}

describe('stopping a backend stops its whole tree', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  let home: ReturnType<typeof makeHome>;
  let upstream: EchoServer;
  let forker: BackendTarget;
  let n = 0;
  const pidFile = () => join(home.root, `grandchild-${n}.pid`);

  before(async () => {
    home = makeHome();
    upstream = await startUpstream(home.root);
    forker = { name: 'forker', dir: join(home.backendsDir, 'forker') };
  });
  after(async () => {
    await upstream.stop();
    home.cleanup();
  });

  /** A relay backend whose run.sh first starts `sleep` in a session of its own (setsid), as some backends do. */
  function writeForker(): string {
    n++;
    writeRelayBackend(forker.dir, upstream.address);
    writeScriptBackend(forker.dir, [
      `setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > '${pidFile()}'`,
      `RELAY_UPSTREAM=${upstream.address} exec perl "$(dirname "$0")/relay.pl" "$@"`,
    ].join('\n'));
    return pidFile();
  }

  test('stop() and close({ stopAll }) reach a setsid grandchild that left the group', async () => {
    const supervisor = new Supervisor({ ...home, runtimeEnv, portRange: portsFor([29580, 29589], [28980, 28989]), stopGraceMs: 1000 });
    await supervisor.start();
    try {
      const stopped = writeForker();
      const { process: backend } = await supervisor.ensureRunning(forker, 'a');
      const child = await grandchild(stopped);
      assert.notEqual(sessionOf(child), sessionOf(backend.pid), 'the grandchild has its own session');
      assert.notEqual(procStat(child), null);
      await supervisor.stop('a');
      assert.equal(await gone(child), true, 'the setsid grandchild outlived stop()');

      const closing = writeForker();
      await supervisor.ensureRunning(forker, 'b');
      const second = await grandchild(closing);
      await supervisor.close({ stopAll: true });
      assert.equal(await gone(second), true, 'the setsid grandchild outlived close({ stopAll: true })');
    } finally {
      await supervisor.close({ stopAll: true });
    }
  });

  test("the reaper of a host killed with SIGKILL reaches a backend's setsid grandchild", async () => {
    const file = writeForker();
    const options = { backendsDir: home.backendsDir, modelsDir: home.modelsDir, stateDir: join(home.root, 'host-state'), portRange: portsFor([29590, 29599], [28990, 28999]) };
    const host = spawn(process.execPath, [...TS_NODE, join(import.meta.dirname, 'testdata/host.ts'), 'idle', JSON.stringify(options), JSON.stringify(forker)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = once(host, 'exit');
    const [line] = (await once(createInterface({ input: host.stdout! }), 'line')) as [string];
    const backendPid = Number(line);
    const child = await grandchild(file);
    host.kill('SIGKILL');
    await exited;
    assert.equal(await gone(backendPid), true, 'the backend outlived its host');
    assert.equal(await gone(child), true, "the backend's setsid grandchild outlived its host");
  });

  /**
   * A relay backend whose run.sh double-forks a sleeper before it serves: the sleeper's parent exits at once, so it
   * is re-parented out of the backend's tree, and `leave` takes it out of the process group too (perl's setpgrp,
   * the session kept) or out of the group and the session (setsid).
   */
  function writeEscaper(leave: 'group' | 'session', dir = forker.dir): string {
    n++;
    const detach = leave === 'session' ? 'setsid sleep 300' : `perl -e 'setpgrp(0, 0); exec @ARGV' sleep 300`;
    writeRelayBackend(dir, upstream.address);
    writeScriptBackend(dir, [
      `( ${detach} </dev/null >/dev/null 2>&1 & echo $! > '${pidFile()}' ) &`,
      'wait',
      `RELAY_UPSTREAM=${upstream.address} exec perl "$(dirname "$0")/relay.pl" "$@"`,
    ].join('\n'));
    return pidFile();
  }

  /** Where the escaped sleeper is: out of the backend's group and parent chain, and maybe out of its session. */
  function assertEscaped(sleeper: number, backend: number, leave: 'group' | 'session'): void {
    const st = procStat(sleeper)!;
    assert.notEqual(st.pgrp, backend, 'the sleeper left the process group');
    assert.notEqual(st.ppid, backend, 'the sleeper is no child of the backend');
    if (leave === 'session') assert.notEqual(st.session, sessionOf(backend), 'the sleeper left the session');
    else assert.equal(st.session, sessionOf(backend), 'the sleeper kept the session');
  }

  /** One backend per step: a swap of its directory stops it (and all of it), then a stop of the respawned one does. */
  async function swapThenStop(supervisor: Supervisor, leave: 'group' | 'session', check: (sleeper: number, backend: number) => void): Promise<void> {
    const first = writeEscaper(leave);
    const { process: backend } = await supervisor.ensureRunning(forker, 'escaper');
    const sleeper = await grandchild(first);
    assertEscaped(sleeper, backend.pid, leave);
    check(sleeper, backend.pid);
    const { stopped } = await supervisor.stopByDirectory(forker.dir);
    assert.equal(listed(sleeper), false, 'the escaped sleeper (or its zombie) outlived the stop before the swap');
    await swapOutOfBand(home.backendsDir, 'forker', (dir) => void writeEscaper(leave, dir));
    const [respawned] = await supervisor.respawnAll(stopped);
    const second = await grandchild(pidFile());
    assertEscaped(second, respawned!.pid, leave);
    await supervisor.stop('escaper');
    assert.equal(listed(second), false, 'the escaped sleeper (or its zombie) outlived stop()');
  }

  /** A backend that dies by itself takes its escaped sleeper with it (what it forked may hold its port). */
  async function crashTakesAll(supervisor: Supervisor, leave: 'group' | 'session'): Promise<void> {
    const file = writeEscaper(leave);
    const { process: backend } = await supervisor.ensureRunning(forker, 'crasher');
    const sleeper = await grandchild(file);
    assertEscaped(sleeper, backend.pid, leave);
    process.kill(backend.pid, 'SIGKILL');
    assert.equal(await gone(sleeper), true, 'the escaped sleeper outlived its crashed backend');
  }

  test('a double-forked descendant that left the group (not the session) is found by its session: gone after a swap, a stop and a crash', async (t) => {
    const supervisor = new Supervisor({ ...home, stateDir: join(home.root, 'state-session'), runtimeEnv, stopGraceMs: 1000, cgroups: false });
    t.after(() => supervisor.close({ stopAll: true }));
    await supervisor.start();
    assert.equal(supervisor.tracking.mechanism, currentPlatform().name === 'linux' ? 'session' : 'process-group');
    process.stderr.write(`\n*** escaping descendants: exercised the ${supervisor.tracking.mechanism.toUpperCase()} path (${supervisor.tracking.description}) ***\n\n`);
    await swapThenStop(supervisor, 'group', () => undefined);
    await crashTakesAll(supervisor, 'group');
  });

  test('a double-forked descendant that left the group and the session (setsid) is found by its cgroup (posix: by its leader\'s mark): gone after a swap, a stop and a crash', async (t) => {
    const supervisor = new Supervisor({ ...home, stateDir: join(home.root, 'state-cgroup'), runtimeEnv, stopGraceMs: 1000 });
    t.after(() => supervisor.close({ stopAll: true }));
    await supervisor.start();
    const { mechanism, description } = supervisor.tracking;
    if (mechanism === 'process-group') {
      process.stderr.write(`\n*** escaping descendants: exercised the PROCESS-GROUP path (${description}) ***\n\n`);
      await swapThenStop(supervisor, 'session', () => undefined);
      return crashTakesAll(supervisor, 'session');
    }
    if (mechanism !== 'cgroup') {
      // Said where it shows: this machine gives backends no cgroup, and the session path cannot reach such a process.
      process.stderr.write(`\n*** escaping descendants: the CGROUP path was NOT exercised here: ${description} ***\n\n`);
      return;
    }
    process.stderr.write(`\n*** escaping descendants: exercised the CGROUP path (${description}) ***\n\n`);
    await swapThenStop(supervisor, 'session', (sleeper, backend) => {
      const cgroup = cgroupOf(backend);
      assert.match(cgroup ?? '', /\/hangar\/[0-9a-f]{8}-[0-9a-f]{8}$/, 'the backend runs in a cgroup of its own');
      assert.equal(cgroupOf(sleeper), cgroup, 'the escaped sleeper is still in the backend\'s cgroup');
    });
    await crashTakesAll(supervisor, 'session');
  });
});
