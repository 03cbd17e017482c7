// CPU and memory of one process from /proc/PID/stat (utime + stime, fields 14-15) and /proc/PID/statm (resident
// pages), as `ps`/`top` read them. CPU is the share of one core since the previous sample of the same process.
import { execFileSync } from 'node:child_process';
import { readKernelFile } from './kernel-file.ts';

export interface Usage {
  cpu: number | null;
  rss: number | null;
}

let sysconf: { ticks: number; page: number } | null = null;
function system(): { ticks: number; page: number } {
  const read = (name: string, fallback: number) => {
    try {
      return Number(execFileSync('getconf', [name], { encoding: 'utf8' }).trim()) || fallback;
    } catch {
      return fallback;
    }
  };
  return (sysconf ??= { ticks: read('CLK_TCK', 100), page: read('PAGESIZE', 4096) });
}

const UNKNOWN: Usage = { cpu: null, rss: null };

/** When a process started, from its start time in clock ticks since boot (field 22 of /proc/PID/stat). */
export function startedAtOf(ticks: string): string | null {
  const at = bootTimeMs() + (Number(ticks) / system().ticks) * 1000;
  return Number.isFinite(at) ? new Date(at).toISOString() : null;
}

let bootMs: number | null = null;

/** The boot time, read once: /proc/stat is long (a line per CPU and interrupt), and it does not change until reboot. */
function bootTimeMs(): number {
  try {
    bootMs ??= Number(/^btime (\d+)$/m.exec(readKernelFile('/proc/stat'))?.[1]) * 1000;
  } catch {
    return Number.NaN;
  }
  return bootMs;
}

const MIN_INTERVAL_MS = 1000;

/** Remembers each process's previous sample, so a reading is the recent CPU share and not a lifetime average. */
export class UsageSampler {
  private readonly previous = new Map<number, { ticks: number; at: number; cpu: number }>();

  sample(pid: number, startedAt: string): Usage {
    if (process.platform !== 'linux') return UNKNOWN;
    let stat: string;
    let statm: string;
    try {
      stat = readKernelFile(`/proc/${pid}/stat`);
      statm = readKernelFile(`/proc/${pid}/statm`);
    } catch {
      this.previous.delete(pid);
      return UNKNOWN;
    }
    const { ticks: hz, page } = system();
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[14 - 3]) + Number(fields[15 - 3]);
    const rss = Number(statm.split(' ')[1]) * page;
    const now = Date.now();
    const before = this.previous.get(pid);
    // Samples closer together than a second would measure noise: the last reading stands until then.
    const memory = Number.isFinite(rss) ? rss : null;
    if (before && now - before.at < MIN_INTERVAL_MS) return { cpu: before.cpu, rss: memory };
    const from = before ?? { ticks: 0, at: Date.parse(startedAt) };
    const elapsed = (now - from.at) / 1000;
    const share = Math.max(0, Math.round(((ticks - from.ticks) / hz / elapsed) * 1000) / 10);
    // A process sampled in its first millisecond has no measurable share yet: no baseline either.
    if (!(elapsed > 0) || !Number.isFinite(share)) return { cpu: null, rss: memory };
    this.previous.set(pid, { ticks, at: now, cpu: share });
    return { cpu: share, rss: memory };
  }

  forget(pid: number): void {
    this.previous.delete(pid);
  }
}
