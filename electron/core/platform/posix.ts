// The POSIX layer: only what macOS has too. Processes from `ps`, cwds by identity from one `lsof` per read,
// listeners from `lsof -iTCP -sTCP:LISTEN`, a backend's processes by its group and mark; memory and GPUs from macOS's tools
// (elsewhere, from what Node and the vendors' tools say).
import { freemem, totalmem } from 'node:os';
import { darwinMemory, parseDisplays } from './darwin.ts';
import { lsofCwds, lsofListener } from './lsof.ts';
import { cpuFigures, diskFigures } from './machine.ts';
import { LEADER_TRACKING, MARK_LEADER, membersOf } from './process-groups.ts';
import { psEnvironments, psTable, psUsage, run } from './ps.ts';
import type { GpuReading, Platform, Usage, UsageSampler } from './types.ts';
import { readVendorGpus } from './vendor-gpus.ts';

export const posix: Platform = {
  name: 'posix',
  leaderSetup: MARK_LEADER,
  tracking: LEADER_TRACKING,
  processes: (pids) => psTable(pids),
  async process(pid) {
    const [entry] = await psTable([pid]);
    return entry && !entry.zombie ? entry : null;
  },
  commands: async (pids) => new Map((await psTable(pids)).map((p) => [p.pid, p.command])),
  cwds: (pids) => lsofCwds(pids),
  async tree(pid) {
    const table = await psTable();
    const now = table.find((p) => p.pid === pid);
    return now ? membersOf(table, [], undefined, { pid, startTime: now.startTime }) : [];
  },
  async statuses(pids) {
    return new Map((await psTable(pids)).map((p) => [p.pid, { ppid: p.ppid, startTime: p.startTime, zombie: p.zombie }]));
  },
  async trees(leaders) {
    if (leaders.length === 0) return [];
    const [table, environments] = await Promise.all([psTable(), psEnvironments()]);
    return leaders.map((leader) => membersOf(table, environments, String(leader.pid), leader));
  },
  listener: (port) => lsofListener(port),
  usageSampler: () => new PsUsage(),
  async machine(diskDir) {
    const memory = process.platform === 'darwin' ? await darwinMemory() : { totalBytes: totalmem(), availableBytes: freemem() };
    return { cpu: cpuFigures(), memory, disk: await diskFigures(diskDir) };
  },
  gpus: (env) => (process.platform === 'darwin' ? appleGpus() : readVendorGpus(env)),
};

/** ps's own figures: %cpu is the share of one core (macOS: a decaying recent average; procps: since the start). */
class PsUsage implements UsageSampler {
  async sample(pids: Array<{ pid: number }>): Promise<Map<number, Usage>> {
    const read = await psUsage(pids.map((p) => p.pid));
    return new Map([...read].map(([pid, u]) => [pid, { cpu: u.cpu, rss: u.rssKiB * 1024 }]));
  }

  forget(): void {}
}

async function appleGpus(): Promise<GpuReading> {
  try {
    const gpus = parseDisplays(await run('system_profiler', ['SPDisplaysDataType', '-json']));
    return { gpus, tools: ['system_profiler'], problem: null, byPid: new Map() };
  } catch (error) {
    return { gpus: [], tools: [], problem: `system_profiler failed (${(error as Error).message})`, byPid: new Map() };
  }
}
