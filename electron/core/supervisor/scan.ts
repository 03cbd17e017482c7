// Every process on the machine whose cwd is, or was, inside the backends directory: by the cwd's path text
// (including ` (deleted)` and backup names) and by the cwd's identity. The processes and their cwds come from the
// platform layer in one read each (/proc on Linux, one ps and one lsof elsewhere); a scan yields to the event loop
// every SCAN_SLICE processes, so a machine with thousands of them never stalls the host.
import { readdirSync, readlinkSync, realpathSync, statSync, type BigIntStats } from 'node:fs';
import { join, sep } from 'node:path';
import { setImmediate as setImmediatePromise } from 'node:timers/promises';
import type { CwdStatus, ScanEntry } from '../../../shared/index.ts';
import type { Platform, ProcessCwd } from '../platform/types.ts';
import { sameInode, type DirIdentity } from './identity.ts';
import { readKernelFile } from './kernel-file.ts';

const DELETED = ' (deleted)';
/** Names LocalAI (and Hangar 0.1) give a backend's directory beside the live one while it is not live. */
const SIDE_NAMES = /\.(install-backup|install-tmp|upgrade-tmp|backup|previous)$/;
/** Hangar's own working directory under the backends dir: `.hangar/<staging|backup|previous|trash>/<name>[.<id>]`. */
const WORK_DIR = '.hangar';
const SCAN_SLICE = 64;

export interface SupervisedProcess {
  pid: number;
  backend: string;
  /** null for a legacy entry. */
  identity: DirIdentity | null;
}

export interface ScanDirectory {
  /** What the OS says the process's cwd is, as read from /proc/PID/cwd. */
  link: string;
  stat: BigIntStats | null;
}

/**
 * `owners`: each process of a supervised backend (the leader and what it started) by pid, with the supervised
 * process it is part of: it is listed as Hangar's, judged by that process's directory.
 */
export async function scanProcesses(platform: Platform, backendsDir: string, supervised: SupervisedProcess[], owners: Map<number, SupervisedProcess>): Promise<ScanEntry[]> {
  const roots = backendRoots(backendsDir);
  const known = knownIdentities(backendsDir, supervised);
  const moved = movedAway(supervised);
  const cwds = await platform.cwds();
  const inside = (cwd: ProcessCwd) => roots.some((root) => cwd.path.startsWith(root + sep)) || (cwd.dev !== null && cwd.ino !== null && known.has(inodeKey({ dev: cwd.dev, ino: cwd.ino })));
  // Commands are read only for the processes a scan lists: ours, and those whose cwd is or was in the directory.
  const listed = new Set([...owners.keys(), ...[...cwds].filter(([, cwd]) => inside(cwd)).map(([pid]) => pid)]);
  const commands = await platform.commands([...listed].sort((a, b) => a - b));
  const entries: ScanEntry[] = [];
  for (const [index, [pid, command]] of [...commands].sort(([a], [b]) => a - b).entries()) {
    if (index > 0 && index % SCAN_SLICE === 0) await setImmediatePromise();
    const mine = owners.get(pid);
    const cwd = cwds.get(pid);
    if (!cwd) {
      if (mine) entries.push({ pid, command, cwd: '', status: 'unknown', supervised: true, backend: mine.backend });
      continue;
    }
    const underRoot = roots.find((root) => cwd.path.startsWith(root + sep));
    const knownDir = cwd.dev !== null && cwd.ino !== null ? known.get(inodeKey({ dev: cwd.dev, ino: cwd.ino })) : undefined;
    if (!mine && !underRoot && !knownDir) continue;
    const backend = mine?.backend ?? knownDir?.backend ?? placeOf(cwd.path.slice(underRoot!.length + 1)).backend;
    const status = mine && moved.has(mine) ? 'stale' : cwdStatus(cwd, underRoot, mine, knownDir);
    entries.push({ pid, command, cwd: cwd.deleted ? cwd.path + DELETED : cwd.path, status, supervised: mine !== undefined, backend });
  }
  return entries;
}

/** Pids whose cwd is `dir` (by identity, so a renamed or deleted one counts) or below it (by path), from one read. */
export async function processesInDirectory(platform: Platform, dir: string, identity: { dev: bigint; ino: bigint } | null): Promise<Set<number>> {
  const pids = new Set<number>();
  for (const [pid, cwd] of await platform.cwds()) {
    const sameDir = identity && cwd.dev === identity.dev && cwd.ino === identity.ino;
    if (sameDir || cwd.path === dir || cwd.path.startsWith(dir + sep)) pids.add(pid);
  }
  return pids;
}

function cwdStatus(cwd: ProcessCwd, underRoot: string | undefined, mine: SupervisedProcess | undefined, knownDir: KnownDir | undefined): CwdStatus {
  if (cwd.dev === null || cwd.ino === null) return 'unknown';
  if (cwd.deleted) return 'stale';
  if (mine?.identity && (cwd.ino !== mine.identity.ino || cwd.dev !== mine.identity.dev)) return 'stale';
  if (knownDir && !knownDir.live) return 'stale';
  if (underRoot && placeOf(cwd.path.slice(underRoot.length + 1)).aside) return 'stale';
  return 'ok';
}

export function readCwd(pid: number): ScanDirectory | null {
  let link: string;
  try {
    link = readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return null;
  }
  let stat: BigIntStats | null = null;
  try {
    stat = statSync(`/proc/${pid}/cwd`, { bigint: true });
  } catch {
    // the process exited or its cwd is out of reach: the path text is all there is
  }
  return { link, stat };
}

/** The process's command line, arguments joined by spaces (null when it is gone or out of reach). */
export function readCommand(pid: number): string | null {
  try {
    return readKernelFile(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return null;
  }
}

/**
 * Which backend a path under the backends dir belongs to, and whether it is aside (not the live tree):
 * `echo/sub` -> echo, live; `echo.install-backup/sub` and `.hangar/previous/echo/sub` -> echo, aside.
 */
export function placeOf(relative: string): { backend: string; aside: boolean } {
  const [first = '', , third = ''] = relative.split(sep);
  if (first === WORK_DIR) return { backend: third.replace(/\.[0-9a-f]{12}$/, ''), aside: true };
  return { backend: first.replace(SIDE_NAMES, ''), aside: SIDE_NAMES.test(first) };
}

/**
 * The supervised processes whose directory is no longer the one at its path (moved away or replaced). Each path is
 * stat'ed once: a backend's many processes share its directory.
 */
function movedAway(supervised: SupervisedProcess[]): Set<SupervisedProcess> {
  const atPath = new Map<string, BigIntStats | null>();
  const statOf = (dir: string) => {
    try {
      return statSync(dir, { bigint: true });
    } catch {
      return null;
    }
  };
  return new Set(
    supervised.filter(({ identity }) => {
      if (!identity) return false;
      if (!atPath.has(identity.dir)) atPath.set(identity.dir, statOf(identity.dir));
      const now = atPath.get(identity.dir);
      return !now || !sameInode(now, identity);
    }),
  );
}

function backendRoots(backendsDir: string): string[] {
  const roots = [backendsDir];
  try {
    const real = realpathSync(backendsDir);
    if (real !== backendsDir) roots.push(real);
  } catch {
    // no backends directory yet
  }
  return roots;
}

interface KnownDir {
  backend: string;
  /** True for a live backend directory; false for one only a supervised process still records. */
  live: boolean;
}

function inodeKey(id: { dev: bigint; ino: bigint }): string {
  return `${id.dev}:${id.ino}`;
}

/** Identities of the live backend directories and of every directory a supervised process was started in. */
function knownIdentities(backendsDir: string, supervised: SupervisedProcess[]): Map<string, KnownDir> {
  const known = new Map<string, KnownDir>();
  for (const p of supervised) {
    if (p.identity) known.set(inodeKey(p.identity), { backend: p.backend, live: false });
  }
  let names: string[] = [];
  try {
    names = readdirSync(backendsDir);
  } catch {
    // no backends directory yet
  }
  for (const name of names) {
    try {
      const st = statSync(join(backendsDir, name), { bigint: true });
      const place = placeOf(name);
      if (st.isDirectory() && name !== WORK_DIR) known.set(inodeKey(st), { backend: place.backend, live: !place.aside });
    } catch {
      // removed while scanning
    }
  }
  return known;
}
