// The formats the POSIX layer reads, as macOS's tools print them. No Mac can be had here: the samples in testdata/
// are written by hand from the tools' documented output (ps(1) `lstart`, lsof(8) field output, vm_stat, sysctl,
// system_profiler -json), with the values of an Apple-silicon and an Intel MacBook Pro; the live runs of ps and lsof
// on Linux are in contract.test.ts.
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseDisplays, parseVmStat } from './darwin.ts';
import { lsofCwds, parseLsofCwds } from './lsof.ts';
import { membersOf, MARK } from './process-groups.ts';
import { parsePs } from './ps.ts';

const sample = (name: string) => readFileSync(join(import.meta.dirname, 'testdata', name), 'utf8');

test('ps: lstart in the C locale and UTC becomes seconds since the epoch; commands keep their spaces', () => {
  const table = parsePs(sample('ps-darwin.txt'));
  assert.equal(table.length, 5);
  const backend = table.find((p) => p.pid === 8141)!;
  assert.deepEqual({ ppid: backend.ppid, pgid: backend.pgid, zombie: backend.zombie }, { ppid: 8140, pgid: 8140, zombie: false });
  assert.equal(backend.startedAt, '2026-12-05T21:48:01.000Z');
  assert.equal(backend.startTime, String(Date.UTC(2026, 11, 5, 21, 48, 1) / 1000));
  assert.equal(backend.command, '/Users/ada/Library/Application Support/hangar/backends/metal-llama-cpp/llama-cpp-fallback --addr 127.0.0.1:30151');
  assert.equal(table[0]!.startedAt, '2026-12-03T08:11:02.000Z', 'a one-digit day is padded with a space');
});

test('ps: a zombie is told, and a line that is not a process is skipped', () => {
  const [zombie, ...rest] = parsePs('  77   1   77 Z    Sat Dec  5 21:48:01 2026 [sleep] <defunct>\nPID PPID\n\n');
  assert.equal(zombie!.zombie, true);
  assert.equal(rest.length, 0);
});

test('lsof: device in hex and inode give identity; a link count of 0 is a deleted directory', () => {
  const cwds = parseLsofCwds(sample('lsof-cwd-darwin.txt'));
  assert.deepEqual(cwds.get(8140), { path: '/Users/ada/Library/Application Support/hangar/backends/metal-llama-cpp', dev: 0x1000010n, ino: 19839201n, deleted: false });
  assert.equal(cwds.get(8141)!.deleted, true);
  assert.equal(cwds.get(8141)!.path, '/Users/ada/Library/Application Support/hangar/backends/metal-llama-cpp.install-backup');
});

test('lsof: a cwd it could not read (no device, no inode) is not reported; Linux\'s " (deleted)" is', () => {
  const cwds = parseLsofCwds('p1\nfcwd\nn/proc/1/cwd (readlink: Permission denied)\np9\nfcwd\nD0xfe00\ni42\nk2\nn/x/echo (deleted)\n');
  assert.equal(cwds.has(1), false);
  assert.deepEqual(cwds.get(9), { path: '/x/echo', dev: 0xfe00n, ino: 42n, deleted: true });
});

test("lsof's device number is the one stat() gives for the same directory", async () => {
  const own = (await lsofCwds([process.pid])).get(process.pid)!;
  const st = statSync(process.cwd(), { bigint: true });
  assert.deepEqual({ dev: own.dev, ino: own.ino }, { dev: st.dev, ino: st.ino });
});

test('vm_stat and sysctl hw.memsize: available is free + speculative + inactive pages', () => {
  const total = Number(sample('sysctl-hw.memsize.txt').trim());
  assert.deepEqual(parseVmStat(sample('vm_stat.txt'), total), { totalBytes: 17179869184, availableBytes: (5187 + 1964 + 361405) * 16384 });
  assert.equal(parseVmStat('nothing here', total), null);
});

test('system_profiler: an Apple GPU shares the machine memory; an Intel Mac lists its integrated and discrete GPUs', () => {
  assert.deepEqual(parseDisplays(sample('system_profiler-displays-m2.json')), [{ vendor: 'apple', index: 0, model: 'Apple M2 Pro', vramTotalBytes: null, vramUsedBytes: null, utilization: null }]);
  const intel = parseDisplays(sample('system_profiler-displays-intel-amd.json'));
  assert.deepEqual(intel.map((g) => [g.vendor, g.model, g.vramTotalBytes]), [['intel', 'Intel UHD Graphics 630', null], ['amd', 'AMD Radeon Pro 5500M', 8 * 2 ** 30]]);
});

test("process groups: the leader's group, the marked and their descendants; a recycled leader pid names nothing", () => {
  const row = (pid: number, ppid: number, pgid: number, startTime = '100') => ({ pid, ppid, pgid, startTime, startedAt: null, command: '', zombie: false });
  const table = [row(10, 1, 10), row(11, 10, 10), row(20, 1, 20), row(21, 20, 20), row(30, 1, 30), row(31, 30, 30)];
  const environments = [{ pid: 20, text: `sleep 600 HOME=/root ${MARK}=abc PATH=/bin` }, { pid: 30, text: `sleep 600 ${MARK}=abcd` }];
  const pids = (startTime: string) => membersOf(table, environments, 'abc', { pid: 10, startTime }).map((m) => m.pid).sort();
  assert.deepEqual(pids('100'), [10, 11, 20, 21]);
  assert.deepEqual(pids('99'), [20, 21], 'pid 10 is another process now: its group is not the backend\'s');
});
