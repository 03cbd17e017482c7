// Run in a fresh pid namespace (unshare --pid --fork --mount-proc, as root, under a shell as its init that reaps
// orphans, so a killed backend's pid is free again at once) by pid-reuse.test.ts: there the next pid can be chosen (/proc/sys/kernel/ns_last_pid), so a backend's pid is given to an unrelated process for
// real. A host (adopting-host.ts) adopts three backends; two of them are killed behind its back and their pids taken
// by impostors that lead a process group and a session of their own, as a daemon would. Then the host stops the
// first model (the stop path) and is SIGKILLed while it still lists the second (the reaper). Prints one JSON line.
// Usage: node --import tsx pid-reuse.ts
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { currentPlatform } from '../../platform/index.ts';
import { isAlive, processStartTime } from '../identity.ts';
import { childrenOf, makeHome, startUpstream, writeRelayBackend } from '../test-helpers.ts';
import { TS_NODE } from '../../testing/ts-node.ts';

async function until(done: () => boolean, what: string, withinMs = 10_000): Promise<void> {
  for (const end = Date.now() + withinMs; !done(); await delay(10)) if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
}

/**
 * An unrelated process given exactly `pid`, leading its own group and session. Another process in the namespace
 * (the host's `ps` under the POSIX layer) may fork between the write and the spawn and take the pid first; the
 * impostor then waits for the pid to be free again and tries once more.
 */
async function impostorAt(pid: number): Promise<ChildProcess> {
  for (let attempt = 1; ; attempt++) {
    await until(() => processStartTime(pid) === null, `pid ${pid} to be free`);
    writeFileSync('/proc/sys/kernel/ns_last_pid', String(pid - 1));
    const child = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    await once(child, 'spawn');
    if (child.pid === pid) return child;
    child.kill('SIGKILL');
    await once(child, 'exit');
    if (attempt === 20) throw new Error(`the impostor got pid ${child.pid}, not ${pid}, 20 times`);
  }
}

/** The host's reaper: its child running the reaper's script (a shell waiting for the next start is a child too). */
const reapersOf = (host: number) => childrenOf(host, 'release) exit 0');

const home = makeHome();
const upstream = await startUpstream(home.root);
const relay = { name: 'relay', dir: join(home.backendsDir, 'relay') };
writeRelayBackend(relay.dir, upstream.address);
const options = { backendsDir: home.backendsDir, modelsDir: home.modelsDir, stateDir: home.stateDir, stopGraceMs: 500 };
const host = spawn(process.execPath, [...TS_NODE, join(import.meta.dirname, 'adopting-host.ts'), JSON.stringify(options), JSON.stringify(relay), 'stopped', 'reaped', 'genuine'], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const lines = createInterface({ input: host.stdout! })[Symbol.asyncIterator]();
const next = async () => (await lines.next()).value as string;
const adopted = JSON.parse(await next()) as Record<string, { pid: number; startTime: string }>;
const impostors: Record<string, ChildProcess> = {};
const exits: Record<string, boolean> = {};
// The POSIX layer's start times are whole seconds (ps's lstart): a pid taken within the second its first owner
// started in is not told apart there (see README, Platforms). The impostors come in a later second, as nearly
// every reuse of a pid does.
if (currentPlatform().name === 'posix') await delay(1000);
for (const model of ['stopped', 'reaped']) {
  const { pid } = adopted[model]!;
  process.kill(-pid, 'SIGKILL');
  impostors[model] = await impostorAt(pid);
  exits[model] = false;
  impostors[model].once('exit', () => (exits[model] = true));
}
// The stop path: the host's row still names pid N with its old start time; N is the impostor's now.
host.stdin!.write('stop stopped\n');
const stopped = await next();
await delay(600); // past the stop's grace period: a SIGKILL after it would have landed by now
const stopPath = { said: stopped, impostorAlive: isAlive(adopted.stopped!.pid) && !exits.stopped };
// The reaper: the host dies while it still lists pid N (and its group) for a model whose process is long gone.
const reaperPids = reapersOf(host.pid!);
host.kill('SIGKILL');
await until(() => !isAlive(adopted.genuine!.pid), 'the reaper to end the genuine backend');
await until(() => reaperPids.every((pid) => !isAlive(pid)), 'the reaper to finish');
const reaper = { reapers: reaperPids.length, genuineGone: !isAlive(adopted.genuine!.pid), impostorAlive: isAlive(adopted.reaped!.pid) && !exits.reaped };
process.stdout.write(`${JSON.stringify({ stopPath, reaper })}\n`);
for (const child of Object.values(impostors)) child.kill('SIGKILL');
await upstream.stop();
home.cleanup();
process.exit(0);
