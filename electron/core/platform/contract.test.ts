// The platform contract: the same cases against both layers, on real processes in real directories, and the two
// must agree. Run on Linux, this is how the POSIX layer (the one macOS uses) is proven: it answers from ps and lsof
// only, the linux one from /proc and cgroups.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { until } from '../../agent/test-agent.ts';
import { Cgroups } from '../supervisor/cgroups.ts';
import { JOIN_CGROUP } from '../supervisor/spawn.ts';
import { stopTree } from '../supervisor/tree-stop.ts';
import { platformNamed } from './index.ts';
import type { Platform, ProcessCwd } from './types.ts';

const layers = [platformNamed('linux'), platformNamed('posix')];
const TIMEOUT = { timeout: 120_000 };

let root: string;
const children: ChildProcess[] = [];

before(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'hangar-platform-')));
});
after(() => {
  for (const child of children) killGroup(child);
  rmSync(root, { recursive: true, force: true });
});

/**
 * Kills the group `child` leads, its own children with it: one left holding the test's stdout pipe would keep this
 * file's process, and the test run waiting on it, alive for as long as it sleeps.
 */
function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // the group is gone
  }
}

/** A process started in `cwd`, leading a group of its own; resolves once it has said its first line (it runs, in its directory). */
async function start(cwd: string, script: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn('/bin/sh', ['-c', script], { cwd, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const lines = createInterface({ input: child.stdout! });
  const [line] = (await once(lines, 'line')) as [string];
  return { child, line };
}

function identity(dir: string): { dev: bigint; ino: bigint } {
  const st = statSync(dir, { bigint: true });
  return { dev: st.dev, ino: st.ino };
}

/** Each layer's answer for one pid, in layer order. */
async function cwdsOf(pid: number): Promise<ProcessCwd[]> {
  return Promise.all(layers.map(async (layer) => {
    const cwd = (await layer.cwds([pid])).get(pid);
    assert.ok(cwd, `${layer.name}: the cwd of pid ${pid} is shown`);
    return cwd;
  }));
}

describe('the platform contract, linux and posix alike', () => {
  test('a directory swapped out of band is told by identity: the process still runs in the old one', TIMEOUT, async () => {
    const dir = join(root, 'swap', 'echo');
    mkdirSync(dir, { recursive: true });
    const recorded = identity(dir);
    const { child } = await start(dir, 'echo up; exec sleep 600');
    renameSync(dir, `${dir}.install-backup`);
    mkdirSync(dir);
    const fresh = identity(dir);
    for (const [i, cwd] of (await cwdsOf(child.pid!)).entries()) {
      const name = layers[i]!.name;
      assert.deepEqual({ dev: cwd.dev, ino: cwd.ino }, recorded, `${name}: the cwd is the recorded directory`);
      assert.notDeepEqual({ dev: cwd.dev, ino: cwd.ino }, fresh, `${name}: not the one now at its path`);
      assert.equal(cwd.deleted, false, `${name}: renamed, not deleted`);
      assert.equal(cwd.path, `${dir}.install-backup`, `${name}: the cwd's path follows the rename`);
    }
    child.kill('SIGKILL');
  });

  test('a deleted cwd is told as deleted', TIMEOUT, async () => {
    const dir = join(root, 'deleted');
    mkdirSync(dir);
    const recorded = identity(dir);
    const { child } = await start(dir, 'echo up; exec sleep 600');
    rmdirSync(dir);
    for (const [i, cwd] of (await cwdsOf(child.pid!)).entries()) {
      assert.equal(cwd.deleted, true, `${layers[i]!.name}: deleted`);
      assert.equal(cwd.path, dir, `${layers[i]!.name}: the path it had`);
      assert.deepEqual({ dev: cwd.dev, ino: cwd.ino }, recorded, `${layers[i]!.name}: still the recorded identity`);
    }
    child.kill('SIGKILL');
  });

  test('a process nobody supervises is found by a scan of a directory, with its parent, group and command', TIMEOUT, async () => {
    const backends = join(root, 'scan');
    const dir = join(backends, 'whisper', 'bin');
    mkdirSync(dir, { recursive: true });
    const marker = `stranger-${process.pid}`;
    const { child } = await start(dir, `sleep 600 & echo up; wait; : ${marker}`);
    // The scan is to find the child as it runs, not race its fork and exec.
    await until('the shell runs sleep', async () => ((await layers[0]!.processes()).some((p) => p.ppid === child.pid && p.command === 'sleep 600') ? true : undefined), 10_000);
    const found = await Promise.all(layers.map(async (layer) => {
      const [table, cwds] = await Promise.all([layer.processes(), layer.cwds()]);
      const inside = [...cwds].filter(([, cwd]) => cwd.path.startsWith(backends + '/')).map(([pid]) => pid);
      const listed = table.filter((p) => inside.includes(p.pid));
      // What a scan reads of them: their command lines alone.
      const commands = await layer.commands([...inside, 2 ** 22 + 1]);
      assert.deepEqual(new Map(listed.map((p) => [p.pid, p.command])), commands, `${layer.name}: the same command lines, none for a pid no process has`);
      return listed.map((p) => ({ pid: p.pid, ppid: p.ppid, pgid: p.pgid, command: p.command, zombie: p.zombie })).sort((a, b) => a.pid - b.pid);
    }));
    const shell = found[0]!.find((p) => p.pid === child.pid);
    assert.ok(shell, 'linux: the shell is found in the directory');
    assert.equal(shell.ppid, process.pid);
    assert.ok(shell.command.includes(marker), `linux: its command line (${shell.command})`);
    assert.ok(found[0]!.some((p) => p.ppid === child.pid && p.command === 'sleep 600'), 'linux: and its child');
    assert.deepEqual(found[1], found[0], 'posix finds the same processes, with the same parents, groups and commands');
    killGroup(child);
  });

  test('start times name a process: the same pid and start time from one read to the next, null once it is gone', TIMEOUT, async () => {
    const dir = join(root, 'start-time');
    mkdirSync(dir);
    const { child } = await start(dir, 'echo up; exec sleep 600');
    for (const layer of layers) {
      const [a, b] = [await layer.process(child.pid!), (await layer.processes()).find((p) => p.pid === child.pid)];
      assert.ok(a && b, `${layer.name}: the process is there`);
      assert.equal(a.startTime, b.startTime, `${layer.name}: one start time`);
      assert.ok(Math.abs(Date.parse(a.startedAt!) - Date.now()) < 120_000, `${layer.name}: started just now (${a.startedAt})`);
    }
    child.kill('SIGKILL');
    await once(child, 'exit');
    for (const layer of layers) assert.equal(await layer.process(child.pid!), null, `${layer.name}: gone`);
  });

  test('the process listening on a TCP port is found by the port', TIMEOUT, async () => {
    const server = 'require("net").createServer().listen(0, "127.0.0.1", function () { console.log(this.address().port) })';
    const { child, line } = await start(root, `exec "${process.execPath}" -e '${server}'`);
    const port = Number(line);
    for (const layer of layers) assert.equal(await layer.listener(port), child.pid, `${layer.name}: the listener of port ${port}`);
    child.kill('SIGKILL');
    await once(child, 'exit');
    for (const layer of layers) assert.equal(await layer.listener(port), null, `${layer.name}: none once it is gone`);
  });

  test('CPU and memory of a busy process agree within 10%', TIMEOUT, async () => {
    // It says so once it has used half a second of CPU, however loaded the machine is; then it keeps spinning.
    const busy = 'const b = Buffer.alloc(64 << 20, 1); for (let said = false; ; ) if (!said && process.cpuUsage().user > 5e5) { said = true; console.log(b.length) }';
    const startedAt = new Date().toISOString();
    const { child } = await start(root, `exec "${process.execPath}" -e '${busy}'`);
    const samples = await Promise.all(layers.map((layer) => layer.usageSampler().sample([{ pid: child.pid!, startedAt }])));
    const [linux, posix] = samples.map((s) => s.get(child.pid!)!);
    assert.ok(linux!.cpu! > 0 && linux!.rss! > 64 * 2 ** 20, `linux reads it busy and large (${JSON.stringify(linux)})`);
    const within = (a: number, b: number) => Math.abs(a - b) <= 0.1 * Math.max(a, b);
    assert.ok(within(linux!.cpu!, posix!.cpu!), `CPU: linux ${linux!.cpu}%, posix ${posix!.cpu}%`);
    assert.ok(within(linux!.rss!, posix!.rss!), `RSS: linux ${linux!.rss}, posix ${posix!.rss}`);
    child.kill('SIGKILL');
  });

  test('machine figures agree: memory, CPUs, the disk of a directory', TIMEOUT, async () => {
    const [linux, posix] = await Promise.all(layers.map((layer) => layer.machine(root)));
    assert.equal(posix!.cpu.count, linux!.cpu.count);
    assert.equal(posix!.memory!.totalBytes, linux!.memory!.totalBytes);
    assert.equal(posix!.disk!.totalBytes, linux!.disk!.totalBytes);
  });

  for (const layer of layers) {
    test(`${layer.name}: an escaped double fork (setsid, then the middle exits) is stopped with its backend`, TIMEOUT, async () => {
      await containedDoubleFork(layer);
    });
  }
});

/**
 * A backend that starts a daemon the classic way: a child that calls setsid and forks, and exits, so the daemon is
 * in no group, session or parent chain of the backend's. Started as the supervisor starts one (in a cgroup of its own
 * where the layer uses them, after the layer's leader setup), the layer's `trees` counts the daemon as the backend's,
 * and the supervisor's stop ends it.
 */
async function containedDoubleFork(layer: Platform): Promise<void> {
  const dir = join(root, `contained-${layer.name}`);
  mkdirSync(dir);
  const cgroups = new Cgroups(dir, layer.name === 'linux');
  const tracking = await cgroups.detect();
  const cgroup = await cgroups.create();
  const setup = [cgroup ? JOIN_CGROUP : '', layer.leaderSetup].filter(Boolean).join('; ');
  const daemon = 'setsid /bin/sh -c "sleep 600 & echo \\$!" &';
  // The daemon's pid first; then, once its middle process has exited, the backend says so.
  const script = `${setup ? `${setup}; ` : ''}${daemon} wait; echo alone; exec sleep 600`;
  const child = spawn('/bin/sh', ['-c', script, cgroup ?? ''], { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const escaped = Number((await lines.next()).value);
  assert.equal((await lines.next()).value, 'alone');
  const exited = once(child, 'exit');
  const leaderEntry = await layer.process(child.pid!);
  const escapedEntry = await layer.process(escaped);
  assert.ok(leaderEntry && escapedEntry, 'both run');
  assert.notEqual(escapedEntry.pgid, leaderEntry.pgid, 'the daemon left the backend\'s group');
  assert.notEqual(escapedEntry.ppid, child.pid, 'and its parent chain');
  const leader = { pid: child.pid!, startTime: leaderEntry.startTime, cgroup };
  const [members = []] = await layer.trees([leader]);
  assert.ok(members.some((m) => m.pid === escaped), `${layer.name} (${(layer.tracking ?? tracking).mechanism}) counts the daemon as the backend's`);
  assert.deepEqual(await stopTree({ platform: layer, cgroups }, leader, exited, 5000), [], 'the stop says nothing survived');
  assert.equal(await layer.process(escaped), null, 'the daemon is gone');
  assert.equal(await layer.process(child.pid!), null, 'the backend is gone');
}
