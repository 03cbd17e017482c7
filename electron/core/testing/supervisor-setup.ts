// What the supervisor's tests share (supervisor.test.ts, supervisor-lifetime.test.ts): a home with the echo backend
// and a relay backend, a supervisor of its own per test, and reads of what the processes and the table are now.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { TestContext } from 'node:test';
import type { ProcessView } from '../../../shared/index.ts';
import { isAlive } from '../supervisor/identity.ts';
import { Supervisor, type BackendTarget, type SupervisorOptions } from '../supervisor/supervisor.ts';
import type { TableEntry } from '../supervisor/table.ts';
import { makeHome, startUpstream, writeEcho, writeRelayBackend } from '../supervisor/test-helpers.ts';

const runtimeEnv = { HANGAR_NODE: process.execPath };

/** A home with the echo backend installed, a relay backend pointing at a shared echo server, and a supervisor. */
export async function setUp(options: Partial<SupervisorOptions> = {}) {
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
export function stopAfter(t: TestContext, supervisor: Supervisor, ...models: string[]): void {
  t.after(() => Promise.allSettled(models.map((model) => supervisor.stop(model, { force: true }))).then(() => undefined));
}

/** Kills `child` once `t` ends, if it still runs. */
export function killAfter(t: TestContext, child: ChildProcess): void {
  t.after(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await once(child, 'exit');
  });
}

export function nextEvent(supervisor: Supervisor, match: (view: ProcessView) => boolean, timeoutMs = 5000): Promise<ProcessView> {
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

export async function gone(pid: number, withinMs = 5000): Promise<boolean> {
  for (const end = Date.now() + withinMs; Date.now() < end; await delay(20)) if (!isAlive(pid)) return true;
  return false;
}

export function readTable(stateDir: string): TableEntry[] {
  return (JSON.parse(readFileSync(join(stateDir, 'processes.json'), 'utf8')) as { processes: TableEntry[] }).processes;
}

export function writeTable(stateDir: string, processes: TableEntry[]): void {
  writeFileSync(join(stateDir, 'processes.json'), JSON.stringify({ version: 1, processes }));
}

function flushTable(supervisor: Supervisor): Promise<void> {
  return (supervisor as unknown as { table: { flush(): Promise<void> } }).table.flush();
}

export async function flushedTable(supervisor: Supervisor, stateDir: string): Promise<TableEntry[]> {
  await flushTable(supervisor);
  return readTable(stateDir);
}

export function childStates(): string[] {
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
export async function settledDescriptors(supervisor: Supervisor, withinMs = 10_000): Promise<Map<string, string>> {
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
export function openedSince(base: Map<string, string>, now: Map<string, string>): string[] {
  return [...now].filter(([fd, target]) => base.get(fd) !== target).map(([fd, target]) => `${fd} → ${target}`);
}

export function pgidOf(pid: number): number | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    return null;
  }
}
