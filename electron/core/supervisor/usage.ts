// CPU and memory of one process from /proc/PID/stat (utime + stime, fields 14-15) and /proc/PID/statm (resident
// pages), as `ps`/`top` read them. CPU is the share of one core since the previous sample of the same process.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

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

/** Remembers each process's previous sample, so a reading is the recent CPU share and not a lifetime average. */
export class UsageSampler {
  private readonly previous = new Map<number, { ticks: number; at: number }>();

  sample(pid: number, startedAt: string): Usage {
    if (process.platform !== 'linux') return UNKNOWN;
    let stat: string;
    let statm: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      statm = readFileSync(`/proc/${pid}/statm`, 'latin1');
    } catch {
      this.previous.delete(pid);
      return UNKNOWN;
    }
    const { ticks: hz, page } = system();
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[14 - 3]) + Number(fields[15 - 3]);
    const now = Date.now();
    const before = this.previous.get(pid) ?? { ticks: 0, at: Date.parse(startedAt) };
    this.previous.set(pid, { ticks, at: now });
    const elapsed = (now - before.at) / 1000;
    const cpu = elapsed > 0 ? Math.max(0, Math.round(((ticks - before.ticks) / hz / elapsed) * 1000) / 10) : null;
    const rss = Number(statm.split(' ')[1]) * page;
    return { cpu: Number.isFinite(cpu) ? cpu : null, rss: Number.isFinite(rss) ? rss : null };
  }

  forget(pid: number): void {
    this.previous.delete(pid);
  }
}
