// The Linux layer: /proc and cgroups, through the supervisor's own readers (scan.ts, identity.ts, process-tree.ts,
// cgroups.ts, usage.ts), so both layers answer the same questions and the contract tests compare them.
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setImmediate as setImmediatePromise } from 'node:timers/promises';
import { processStartTime, procStat } from '../supervisor/identity.ts';
import { indexProcesses, processTree, readProcessTableYielding } from '../supervisor/process-tree.ts';
import { readCommand, readCwd } from '../supervisor/scan.ts';
import { startedAtOf, UsageSampler as ProcUsage } from '../supervisor/usage.ts';
import { listenerPid } from './linux-listener.ts';
import { cpuFigures, diskFigures } from './machine.ts';
import type { Member, MachineFigures, Platform, ProcessCwd, ProcessEntry, ProcessStatus, Usage, UsageSampler } from './types.ts';
import { readVendorGpus } from './vendor-gpus.ts';

const DELETED = ' (deleted)';
/** How many processes are read between turns of the event loop. */
const YIELD_EVERY = 64;

export const linux: Platform = {
  name: 'linux',
  leaderSetup: '',
  tracking: null,
  async processes(pids = pidsInProc()) {
    const entries: ProcessEntry[] = [];
    for (const [index, pid] of pids.entries()) {
      if (index > 0 && index % YIELD_EVERY === 0) await setImmediatePromise();
      const entry = entryOf(pid);
      if (entry) entries.push(entry);
    }
    return entries;
  },
  async process(pid) {
    const entry = entryOf(pid);
    return entry && !entry.zombie ? entry : null;
  },
  async commands(pids) {
    const commands = new Map<number, string>();
    for (const [index, pid] of pids.entries()) {
      if (index > 0 && index % YIELD_EVERY === 0) await setImmediatePromise();
      const command = readCommand(pid);
      if (command !== null) commands.set(pid, command);
    }
    return commands;
  },
  async cwds(pids = pidsInProc()) {
    const cwds = new Map<number, ProcessCwd>();
    for (const [index, pid] of pids.entries()) {
      // A machine with thousands of processes never stalls the host for all of them at once.
      if (index > 0 && index % YIELD_EVERY === 0) await setImmediatePromise();
      const cwd = readCwd(pid);
      if (!cwd) continue;
      const deleted = cwd.link.endsWith(DELETED) || cwd.stat?.nlink === 0n;
      const path = cwd.link.endsWith(DELETED) ? cwd.link.slice(0, -DELETED.length) : cwd.link;
      cwds.set(pid, { path, dev: cwd.stat?.dev ?? null, ino: cwd.stat?.ino ?? null, deleted });
    }
    return cwds;
  },
  async statuses(pids) {
    const statuses = new Map<number, ProcessStatus>();
    for (const pid of pids) {
      const stat = procStat(pid);
      if (stat) statuses.set(pid, { ppid: stat.ppid, startTime: stat.startTime, zombie: stat.state === 'Z' || stat.state === 'X' });
    }
    return statuses;
  },
  tree: async (pid) => processTree({ pid, startTime: processStartTime(pid), cgroup: null }),
  async trees(leaders) {
    if (leaders.length === 0) return [];
    const processes = indexProcesses(await readProcessTableYielding(YIELD_EVERY));
    const trees: Member[][] = [];
    for (const [index, leader] of leaders.entries()) {
      if (index > 0 && index % YIELD_EVERY === 0) await setImmediatePromise();
      trees.push(processTree(leader, processes));
    }
    return trees;
  },
  listener: async (port) => listenerPid(port),
  usageSampler: () => new ProcUsageSampler(),
  machine: async (diskDir): Promise<MachineFigures> => ({ cpu: cpuFigures(), memory: await procMemory(), disk: await diskFigures(diskDir) }),
  gpus: (env) => readVendorGpus(env),
};

function pidsInProc(): number[] {
  return readdirSync('/proc').map(Number).filter(Number.isInteger);
}

function entryOf(pid: number): ProcessEntry | null {
  const stat = procStat(pid);
  if (!stat) return null;
  const zombie = stat.state === 'Z' || stat.state === 'X';
  return { pid, ppid: stat.ppid, pgid: stat.pgrp, startTime: stat.startTime, startedAt: startedAtOf(stat.startTime), command: readCommand(pid) ?? '', zombie };
}

class ProcUsageSampler implements UsageSampler {
  private readonly proc = new ProcUsage();

  async sample(pids: Array<{ pid: number; startedAt: string }>): Promise<Map<number, Usage>> {
    return new Map(pids.map(({ pid, startedAt }) => [pid, this.proc.sample(pid, startedAt)]));
  }

  forget(pid: number): void {
    this.proc.forget(pid);
  }
}

/** MemTotal and MemAvailable from /proc/meminfo (kB). */
async function procMemory(): Promise<MachineFigures['memory']> {
  const text = await readFile('/proc/meminfo', 'utf8').catch(() => null);
  if (text === null) return null;
  const kb = (field: string) => {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    return match ? Number(match[1]) * 1024 : null;
  };
  const total = kb('MemTotal');
  const available = kb('MemAvailable') ?? kb('MemFree');
  return total === null || available === null ? null : { totalBytes: total, availableBytes: available };
}
