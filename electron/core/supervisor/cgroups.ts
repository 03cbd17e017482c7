// Where the machine allows it, each backend process runs in a cgroup (v2) of its own: `hangar/<name>` under the
// host's own cgroup. A cgroup holds every process the backend ever forks, whatever they do to leave its process
// group, its session or its parent chain (a double fork and setsid), and `cgroup.kill` (Linux 5.14+) ends them all
// at once; before 5.14 each pid in `cgroup.procs` is killed until none is left. Where no cgroup v2 hierarchy is
// mounted, or the host's cgroup is not writable, backends are found by process group, session and parent links
// only, and the host says so (`tracking`).
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { mkdir, watch } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { ProcessTracking } from '../platform/types.ts';
import { readKernelFile } from './kernel-file.ts';

const SUBTREE = 'hangar';
/**
 * How long a release waits for a killed cgroup's processes to be gone before it leaves the empty-to-be cgroup: a
 * process that holds tens of GB (a model's weights) takes seconds to exit, even after SIGKILL.
 */
const EMPTY_WAIT_MS = 10_000;

export type { ProcessTracking } from '../platform/types.ts';

/** This host's backend cgroups, `<cgroup of the host>/hangar/<prefix>-<random>`. */
export class Cgroups {
  /** `<mount><own cgroup>/hangar`, or null on the session path. */
  private base: string | null = null;
  private canKill = false;
  tracking: ProcessTracking = sessionPath('not checked yet');
  /** Names this host's cgroups apart from other hosts' on the machine. */
  private readonly prefix: string;

  /** `owner`: what is this host's alone on the machine (its backends directory). `enabled`: false keeps to the session path. */
  constructor(
    owner: string,
    private readonly enabled: boolean,
  ) {
    this.prefix = createHash('sha256').update(owner).digest('hex').slice(0, 8);
  }

  /** Finds whether this host can put processes in cgroups of their own (once per process: the answer holds). */
  async detect(): Promise<ProcessTracking> {
    const found = this.enabled ? await (detection ??= probe()) : { base: null, canKill: false, tracking: sessionPath('turned off for this host') };
    this.base = found.base;
    this.canKill = found.canKill;
    this.tracking = found.tracking;
    return this.tracking;
  }

  /** The directory the reaper removes this host's cgroups from, or null. */
  get root(): string | null {
    return this.base;
  }

  /** A new, empty cgroup for one backend process, or null on the session path (or when it cannot be made). */
  async create(): Promise<string | null> {
    if (!this.base) return null;
    const path = join(this.base, `${this.prefix}-${randomBytes(4).toString('hex')}`);
    return mkdir(path).then(() => path, () => null);
  }

  /**
   * This host's cgroup that `pid` is in, or null. Read from the process itself, not from a saved table: an entry
   * written without its cgroup must not leave the cgroup to the sweep, which would end the adopted process.
   */
  holding(pid: number): string | null {
    const own = this.base ? cgroupOf(pid) : null;
    if (!this.base || !own) return null;
    const path = join(this.base, basename(own));
    return basename(own).startsWith(`${this.prefix}-`) && path.endsWith(own) && existsSync(path) ? path : null;
  }

  /**
   * Ends this host's cgroups that `keep` does not name: what a host killed with its reaper left, the children of a
   * kept backend that died while no host ran. Whatever still runs in them was started by a backend of this home.
   */
  async sweep(keep: Set<string>): Promise<void> {
    if (!this.base) return;
    const names = readdirSync(this.base).filter((n) => n.startsWith(`${this.prefix}-`));
    await Promise.all(names.map((name) => join(this.base!, name)).filter((path) => !keep.has(path)).map((path) => this.release(path)));
  }

  /**
   * Every process in the cgroup, and then every process that would join it meanwhile, is sent SIGKILL. True when the
   * kernel did it at once (cgroup.kill): then nothing the cgroup's processes forked is left to find.
   */
  kill(path: string | null): boolean {
    if (!path) return false;
    if (this.canKill) {
      try {
        writeFileSync(join(path, 'cgroup.kill'), '1');
        return true;
      } catch {
        // gone already, or refused: kill the members one by one below
      }
    }
    for (let round = 0; round < 10; round++) {
      const pids = members(path);
      if (pids.length === 0) break;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // exited meanwhile
        }
      }
    }
    return false;
  }

  /**
   * Kills what is left in the cgroup, waits (bounded) for it to empty, and removes it. Returns the pids still in it
   * when the wait ended ([] once it emptied): the cgroup is then left for the next start's sweep.
   */
  async release(path: string | null): Promise<number[]> {
    if (!path || !existsSync(path)) return [];
    this.kill(path);
    await untilEmpty(path, EMPTY_WAIT_MS);
    const left = members(path);
    if (left.length === 0) removeDir(path);
    return left;
  }
}

/** The pids in a cgroup ([] when it is gone). */
export function members(path: string | null): number[] {
  if (!path) return [];
  try {
    return readKernelFile(join(path, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The cgroup (v2) path of a process, relative to the hierarchy's root, or null. */
export function cgroupOf(pid: number | 'self'): string | null {
  try {
    const line = readKernelFile(`/proc/${pid}/cgroup`, 'utf8').split('\n').find((l) => l.startsWith('0::'));
    return line ? line.slice(3) : null;
  } catch {
    return null;
  }
}

let detection: Promise<{ base: string | null; canKill: boolean; tracking: ProcessTracking }> | undefined;

async function probe(): Promise<{ base: string | null; canKill: boolean; tracking: ProcessTracking }> {
  const none = (why: string) => ({ base: null, canKill: false, tracking: sessionPath(why) });
  if (process.platform !== 'linux') return none('cgroups are Linux only');
  const own = cgroupOf('self');
  if (own === null) return none('this machine has no cgroup v2 hierarchy (cgroup v1 only)');
  const mount = cgroup2Mount();
  if (!mount) return none('no cgroup v2 hierarchy is mounted here');
  if (!own.startsWith(mount.root)) return none(`this host's cgroup ${own} is outside the mounted hierarchy`);
  const base = join(mount.point, own.slice(mount.root.length), SUBTREE);
  try {
    await mkdir(base, { recursive: true });
  } catch (error) {
    return none(`${base} cannot be created (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  // Moving a process needs write access to its cgroup and to the common ancestor's: try it with a real one.
  const trial = join(base, `probe-${process.pid}-${randomBytes(3).toString('hex')}`);
  try {
    await mkdir(trial);
    const child = spawn('/bin/sh', ['-c', 'echo 0 > "$0/cgroup.procs"', trial], { stdio: 'ignore' });
    const [code] = (await once(child, 'exit')) as [number | null];
    await untilEmpty(trial, EMPTY_WAIT_MS);
    if (code !== 0) return none(`processes cannot be moved into ${base} (no write access)`);
  } catch (error) {
    return none(`${base} is not writable (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  } finally {
    removeDir(trial);
  }
  const canKill = existsSync(join(base, 'cgroup.kill'));
  const how = canKill ? 'cgroup.kill' : 'every pid in cgroup.procs killed (no cgroup.kill before Linux 5.14)';
  return {
    base,
    canKill,
    tracking: { mechanism: 'cgroup', description: `each backend process runs in a cgroup of its own under ${base}: a stop ends every process it started, however it left (${how})` },
  };
}

function sessionPath(why: string): ProcessTracking {
  return {
    mechanism: 'session',
    description: `no cgroup for backends (${why}): a stop ends a backend's process group, its session and its descendants; a process that leaves all three (a double fork with setsid) is not found`,
  };
}

/** Where cgroup2 is mounted, and which path of the hierarchy the mount shows. */
function cgroup2Mount(): { point: string; root: string } | null {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return null;
  }
  for (const line of text.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!before || !after || after.split(' ')[0] !== 'cgroup2') continue;
    const fields = before.split(' ');
    const root = unescape(fields[3] ?? '/');
    return { point: unescape(fields[4] ?? ''), root: root === '/' ? '' : root };
  }
  return null;
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** Resolves once nothing runs in the cgroup (its `cgroup.events` says `populated 0`), or after `ms`. */
export async function untilEmpty(path: string, ms: number): Promise<void> {
  const populated = () => {
    try {
      return /^populated 1$/m.test(readKernelFile(join(path, 'cgroup.events'), 'utf8'));
    } catch {
      return false;
    }
  };
  if (!populated()) return;
  // The kernel reports a change of cgroup.events as a modification of the file.
  const abort = new AbortController();
  const changed = (async () => {
    try {
      for await (const _ of watch(join(path, 'cgroup.events'), { signal: abort.signal })) if (!populated()) return;
    } catch {
      // aborted, or the cgroup went
    }
  })();
  const deadline = delay(ms, undefined, { ref: false });
  // A change between the first check and the watch's start is caught by checking once more.
  if (populated()) await Promise.race([changed, deadline]);
  abort.abort();
}

function removeDir(path: string): void {
  try {
    rmdirSync(path);
  } catch {
    // still populated, or gone already
  }
}
