// A backend's processes are its process group and every descendant, setsid children included: a stop, a closing
// host and the reaper of a killed host all reach them. Real processes; backend ports 29580-29599.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { isAlive, procStat } from './identity.ts';
import { Supervisor, type BackendTarget } from './supervisor.ts';
import { makeHome, startEchoServer, writeEcho, writeRelayBackend, writeScriptBackend } from './test-helpers.ts';

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

/** The session id (field 6 of /proc/PID/stat). */
function sessionOf(pid: number): number {
  const text = readFileSync(`/proc/${pid}/stat`, 'latin1');
  return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[3]);
}

describe('stopping a backend stops its whole tree', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  let home: ReturnType<typeof makeHome>;
  let upstream: Awaited<ReturnType<typeof startEchoServer>>;
  let forker: BackendTarget;
  let n = 0;
  const pidFile = () => join(home.root, `grandchild-${n}.pid`);

  before(async () => {
    home = makeHome();
    const upstreamDir = join(home.root, 'upstream');
    await writeEcho(upstreamDir, 'upstream');
    upstream = await startEchoServer(upstreamDir);
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
    const supervisor = new Supervisor({ ...home, runtimeEnv, portRange: [29580, 29589], stopGraceMs: 1000 });
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
    const options = { backendsDir: home.backendsDir, modelsDir: home.modelsDir, stateDir: join(home.root, 'host-state'), portRange: [29590, 29599] };
    const host = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'testdata/host.ts'), 'idle', JSON.stringify(options), JSON.stringify(forker)], {
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
});
