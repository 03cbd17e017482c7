// What Hangar needs to know about the machine's processes, and how it contains a backend, said once for every OS.
// `linux` answers from /proc and cgroups; `posix` only with what macOS has too (ps, lsof, process groups).
import type { GpuView, NodeResources } from '../../../shared/types.ts';

export type PlatformName = 'linux' | 'posix';

export interface ProcessEntry {
  pid: number;
  ppid: number;
  /** The process group: a backend leads its own, so its members are found by it. */
  pgid: number;
  /**
   * With the pid, names one process for the life of the boot. Each layer has its own unit (clock ticks since boot on
   * linux, seconds since the epoch on posix): compare it only with a start time the same layer gave.
   */
  startTime: string;
  /** When it started, as an ISO time, or null when the OS does not say. */
  startedAt: string | null;
  /** Its command line, arguments joined by spaces ('' when the OS does not show it). */
  command: string;
  /** It has finished and only waits to be reaped. */
  zombie: boolean;
}

/** A process's working directory as the OS holds it: by identity, not only by the path text. */
export interface ProcessCwd {
  /** The cwd's path as the OS names it now (a renamed directory shows its new name, where the OS follows it). */
  path: string;
  /** The directory's identity, or null when the OS shows only the path. */
  dev: bigint | null;
  ino: bigint | null;
  /** True when the directory has been removed (no link left to it). */
  deleted: boolean;
}

export interface Usage {
  /** Percent of one core. */
  cpu: number | null;
  /** Resident memory in bytes. */
  rss: number | null;
}

export interface MachineFigures {
  cpu: NodeResources['cpu'];
  memory: NodeResources['memory'];
  disk: NodeResources['disk'];
}

export interface GpuReading {
  gpus: GpuView[];
  /** The tools that answered. */
  tools: string[];
  problem: string | null;
  /** pid -> GPU memory in bytes, where a tool reports it per process. */
  byPid: Map<number, number>;
}

/** How a stop finds all of a backend's processes on this machine, in one line for the log and `hangar info`. */
export interface ProcessTracking {
  mechanism: 'cgroup' | 'session' | 'process-group';
  description: string;
}

/** One process of a backend, named by pid + start time so a pid the OS gave to another process is never signalled. */
export interface Member {
  pid: number;
  startTime: string | null;
}

/** A backend's first process as recorded at its spawn, with the cgroup it was started in (linux), or null. */
export interface Leader extends Member {
  cgroup: string | null;
}

/** What a process is now, as a stop checks it before each signal: the pid with another start time is another process. */
export interface ProcessStatus {
  ppid: number;
  startTime: string;
  zombie: boolean;
}

export interface Platform {
  readonly name: PlatformName;
  /**
   * A shell's part the supervisor runs in a backend's first process before it becomes the backend (same pid), so
   * that its tree can be found however its processes leave ('' when the layer needs none: cgroups do it on linux).
   */
  readonly leaderSetup: string;
  /** How a supervisor finds all of a backend's processes here, when it does not put them in cgroups. */
  readonly tracking: ProcessTracking | null;
  /** Every process on the machine (those of `pids` that exist, when given), from one read. */
  processes(pids?: number[]): Promise<ProcessEntry[]>;
  /** The process `pid` now, or null when none has it (a zombie has none: it has finished). */
  process(pid: number): Promise<ProcessEntry | null>;
  /** The command line of each of `pids` the OS shows (its arguments joined by spaces), from one read: what a scan lists. */
  commands(pids: number[]): Promise<Map<number, string>>;
  /** The cwd of each of `pids` (of every process when omitted) that the OS shows, from one read. */
  cwds(pids?: number[]): Promise<Map<number, ProcessCwd>>;
  /** Each of `pids` the OS shows now, zombies included, from one read: the check a stop makes before each signal. */
  statuses(pids: number[]): Promise<Map<number, ProcessStatus>>;
  /** The process `pid` as it is now, with its group and every descendant (linux: its session too); [] once it is gone. */
  tree(pid: number): Promise<Member[]>;
  /**
   * Each leader's processes now, from one read of the process table: its cgroup's members, its group (linux: and
   * session) while its pid is still its own, and their descendants.
   */
  trees(leaders: Leader[]): Promise<Member[][]>;
  /** The pid listening on TCP `port` on this machine, or null. */
  listener(port: number): Promise<number | null>;
  /** CPU and memory of each of `pids`, from one read; a fresh sampler measures CPU from each process's start. */
  usageSampler(): UsageSampler;
  machine(diskDir: string): Promise<MachineFigures>;
  gpus(env: NodeJS.ProcessEnv): Promise<GpuReading>;
}

export interface UsageSampler {
  sample(pids: Array<{ pid: number; startedAt: string }>): Promise<Map<number, Usage>>;
  forget(pid: number): void;
}
