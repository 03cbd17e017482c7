// The shell that waits for the next start (warm-shell.ts), with real processes: a start becomes it, one whose
// directory adds to the environment does not, and it ends with its host.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test, type TestContext } from 'node:test';
import { writeGallery } from '../testing/fixtures.ts';
import { until } from '../testing/until.ts';
import { cgroupOf } from './cgroups.ts';
import { isAlive } from './identity.ts';
import { Supervisor, type BackendTarget } from './supervisor.ts';
import { childrenOf, makeHome, writeEcho, type Home } from './test-helpers.ts';
import { TS_NODE } from '../testing/ts-node.ts';

const runtimeEnv = { HANGAR_NODE: process.execPath };

/** The shells `host` has waiting for a start. */
const waitingShells = (host: number) => childrenOf(host, 'IFS= read -r dir');

const oneShell = (host: number) => () => {
  const shells = waitingShells(host);
  return shells.length === 1 ? shells[0]! : undefined;
};

/** The cgroup the waiting shell joined, once it has (null where backends get none). */
function joinedCgroup(s: Supervisor, shell: number): Promise<string> | null {
  if (s.tracking.mechanism !== 'cgroup') return null;
  return until('the shell in a cgroup of its own', () => (cgroupOf(shell)?.includes('/hangar/') ? cgroupOf(shell)! : undefined), 10_000);
}

function environOf(pid: number): Map<string, string> {
  const pairs = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
  return new Map(pairs.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]));
}

describe('the shell waiting for the next start', { skip: process.platform !== 'linux' && 'it is found through /proc' }, () => {
  let home: Home;
  let echo: BackendTarget;
  before(async () => {
    home = makeHome();
    echo = { name: 'echo', dir: join(home.backendsDir, 'echo') };
    await writeEcho(echo.dir, '1.0.0');
  });
  after(() => home.cleanup());

  async function supervisor(t: TestContext, portRange: [number, number]): Promise<Supervisor> {
    const s = new Supervisor({ ...home, runtimeEnv, portRange });
    t.after(() => s.close({ stopAll: true }));
    await s.start();
    await s.warmUp();
    return s;
  }

  test('the shell is made when the host warms up, once it serves, not during its start', async (t) => {
    const s = new Supervisor({ ...home, runtimeEnv, portRange: [29700, 29719] });
    t.after(() => s.close({ stopAll: true }));
    await s.start();
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(waitingShells(process.pid), [], 'no shell spawned by the start');
    await s.warmUp();
    await until('a shell waiting after the warm-up', oneShell(process.pid), 10_000);
  });

  test('a start becomes it: the backend is that process, in its cgroup and its directory, with the host\'s environment; another then waits', async (t) => {
    const s = await supervisor(t, [29700, 29719]);
    const shell = await until('a shell waiting after the start', oneShell(process.pid), 10_000);
    const cgroup = await joinedCgroup(s, shell);
    const { process: view } = await s.ensureRunning(echo, 'm1');
    assert.equal(view.pid, shell, 'the backend is the waiting shell become run.sh');
    assert.equal(readlinkSync(`/proc/${shell}/cwd`), echo.dir);
    assert.ok(readFileSync(`/proc/${shell}/cmdline`, 'utf8').endsWith(`/server.cjs\x00--addr\x00127.0.0.1:${view.port}\x00`), 'run.sh ran with the port');
    if (cgroup) assert.equal(cgroupOf(shell), cgroup, 'it kept the cgroup it joined while waiting');
    const env = environOf(shell);
    assert.deepEqual([env.get('LOCALAI_BACKEND_PARENT_WATCH'), env.get('HANGAR_NODE')], ['false', process.execPath]);
    const next = await until('another shell waiting', oneShell(process.pid), 10_000);
    assert.notEqual(next, shell);
  });

  test('a backend whose directory adds to the environment (Vulkan ICDs) is spawned anew, and the shell keeps waiting', async (t) => {
    const dir = join(home.backendsDir, 'vulkan-echo');
    await writeEcho(dir, '1.0.0');
    mkdirSync(join(dir, 'vulkan', 'icd.d'), { recursive: true });
    writeFileSync(join(dir, 'vulkan', 'icd.d', 'gpu_icd.json'), '{}');
    const s = await supervisor(t, [29720, 29739]);
    const shell = await until('a shell waiting after the start', oneShell(process.pid), 10_000);
    const { process: view } = await s.ensureRunning({ name: 'vulkan-echo', dir }, 'm2');
    assert.notEqual(view.pid, shell);
    assert.equal(environOf(view.pid).get('VK_DRIVER_FILES'), join(dir, 'vulkan', 'icd.d', 'gpu_icd.json'));
    assert.deepEqual(waitingShells(process.pid), [shell], 'the shell still waits');
  });

  test('closing the host ends the waiting shell and removes its cgroup', async (t) => {
    const s = await supervisor(t, [29740, 29759]);
    const shell = await until('a shell waiting after the start', oneShell(process.pid), 10_000);
    const cgroup = await joinedCgroup(s, shell);
    await s.close({ stopAll: false });
    assert.equal(isAlive(shell), false);
    const mount = readFileSync('/proc/self/mounts', 'utf8').split('\n').find((l) => l.split(' ')[2] === 'cgroup2')?.split(' ')[1];
    if (cgroup && mount) assert.equal(existsSync(join(mount, cgroup)), false, 'its cgroup is gone');
  });

  test('a host killed with SIGKILL leaves no waiting shell behind: it ends once the host\'s end of its pipe closes', async (t) => {
    const gallery = join(home.root, 'empty-gallery.yaml');
    await writeGallery(gallery, []);
    const host = spawn(process.execPath, [...TS_NODE, join(import.meta.dirname, '../testing/node-host.ts'), join(home.root, 'host-home'), gallery], { stdio: ['pipe', 'pipe', 'inherit'] });
    t.after(() => void host.kill('SIGKILL'));
    for await (const line of createInterface({ input: host.stdout! })) if (line.includes('"ready"')) break;
    const shell = await until('the host\'s waiting shell', oneShell(host.pid!), 10_000);
    host.kill('SIGKILL');
    await until('the waiting shell to end', () => (isAlive(shell) ? undefined : true), 10_000);
  });
});
