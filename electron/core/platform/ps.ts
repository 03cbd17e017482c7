// The process table as `ps` prints it, on Linux (procps) and macOS alike. `lstart` is text in the C locale and, with
// TZ=UTC, in UTC ("Sun Dec  6 01:34:37 2026"): parsed here into seconds since the epoch, the posix start time.
import { execFile } from 'node:child_process';
import type { ProcessEntry } from './types.ts';

/** ps's environment: English month names, UTC times, whatever the user's locale and zone are. */
const PS_ENV = { ...process.env, LC_ALL: 'C', TZ: 'UTC' };
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
// pid, ppid, pgid, state, then lstart's five words (weekday month day hh:mm:ss year), then the command to the end of
// the line.
const ROW = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+\w{3}\s+(\w{3})\s+(\d{1,2})\s+(\d{2}):(\d{2}):(\d{2})\s+(\d{4})\s?(.*)$/;
const COLUMNS = 'pid=,ppid=,pgid=,stat=,lstart=,command=';

/** Every process (`pids` omitted) or those of `pids` that exist; `-ww`: commands are never cut to a width. */
export async function psTable(pids?: number[]): Promise<ProcessEntry[]> {
  if (pids && pids.length === 0) return [];
  const select = pids ? ['-p', pids.join(',')] : ['-A'];
  return parsePs(await run('ps', [...select, '-ww', '-o', COLUMNS]));
}

export function parsePs(text: string): ProcessEntry[] {
  return text.split('\n').flatMap((line): ProcessEntry[] => {
    const m = ROW.exec(line);
    if (!m) return [];
    const [, pid, ppid, pgid, state, month, day, hh, mm, ss, year, command] = m;
    const ms = Date.UTC(Number(year), MONTHS.indexOf(month!), Number(day), Number(hh), Number(mm), Number(ss));
    if (!MONTHS.includes(month!) || !Number.isFinite(ms)) return [];
    return [{ pid: Number(pid), ppid: Number(ppid), pgid: Number(pgid), startTime: String(ms / 1000), startedAt: new Date(ms).toISOString(), command: command!.trim(), zombie: state!.startsWith('Z') }];
  });
}

/** `ps` with the environment of each process after its command (BSD's `e`): what the posix containment marks with. */
export async function psEnvironments(): Promise<Array<{ pid: number; text: string }>> {
  const text = await run('ps', ['axeww', '-o', 'pid=,command=']);
  return text.split('\n').flatMap((line) => {
    const m = /^\s*(\d+)\s(.*)$/.exec(line);
    return m ? [{ pid: Number(m[1]), text: m[2]! }] : [];
  });
}

/** `ps -o pid=,rss=,%cpu=` for `pids`: resident KiB and the CPU share as ps reports it. */
export async function psUsage(pids: number[]): Promise<Map<number, { rssKiB: number; cpu: number }>> {
  const usage = new Map<number, { rssKiB: number; cpu: number }>();
  if (pids.length === 0) return usage;
  const text = await run('ps', ['-p', pids.join(','), '-o', 'pid=,rss=,%cpu=']);
  for (const line of text.split('\n')) {
    const [pid, rss, cpu] = line.trim().split(/\s+/).map(Number);
    if (Number.isInteger(pid) && Number.isFinite(rss) && Number.isFinite(cpu)) usage.set(pid!, { rssKiB: rss!, cpu: cpu! });
  }
  return usage;
}

/**
 * A tool's stdout. ps and lsof exit 1 when some asked-for pid is gone, and still print the others: the output
 * counts, the status does not; a tool that cannot be run at all is an error.
 */
export function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { encoding: 'utf8', env: PS_ENV, maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => {
      if (error && typeof error.code === 'string') reject(new Error(`${command} could not be run (${error.code})`));
      else resolve(stdout);
    });
  });
}
