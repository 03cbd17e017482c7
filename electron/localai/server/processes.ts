// A LocalAI server's backend processes, found on this machine: LocalAI starts each model as `run.sh --addr
// 127.0.0.1:PORT` with its cwd the backend's directory, as a child of its own process (pkg/model/initializers.go,
// process.go). A process is LocalAI's when Hangar does not supervise it, its command carries `--addr`, and its cwd is
// one of this node's backend directories, live or replaced, told by the cwd's identity (so a LocalAI in a container
// whose backends directory is a volume counts too) or by its path. When LocalAI's own pid is known (given by whoever
// runs it, or the process listening on its port, unless that is a container's port forwarder), only its children
// count: a stray `--addr` process in a backend's directory is none of LocalAI's.
import { readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { isLoopback } from '../../../shared/loopback.ts';
import type { Platform, ProcessCwd } from '../../core/platform/index.ts';
import { placeOf } from '../../core/supervisor/index.ts';

export interface ServerProcess {
  pid: number;
  ppid: number;
  /** The backend directory it runs from, by name (`echo` for a replaced `echo.backup` too). */
  backend: string;
  port: number;
  /** When it started, as the OS tells it (null when it does not). */
  startedAt: string | null;
  /** What the OS says its cwd is, and the cwd's identity when it can be read. */
  cwd: string;
  identity: { dev: bigint; ino: bigint } | null;
  /** Why it does not run from its backend's live tree, or null when it does. */
  stale: string | null;
}

const DELETED = ' (deleted)';
const ADDR = /(?:^|\s)--addr(?:=|\s+)\S*:(\d{1,5})(?:\s|$)/;

/** Forwarders that listen on a container's published port: their children are not LocalAI's backends. */
const PORT_FORWARDERS = new Set(['docker-proxy', 'rootlessport', 'rootlesskit', 'slirp4netns', 'pasta', 'pasta.avx2', 'conmon', 'vpnkit']);

/** What listens on a loopback URL's port: LocalAI itself (its pid), or a container's port forwarder. */
export type ServerListener = { pid: number } | { forwarder: string };

/** What listens for LocalAI on this machine; null when its URL is not this machine's or nothing listens there. */
export async function serverListener(platform: Platform, url: string): Promise<ServerListener | null> {
  const { hostname, port, protocol } = new URL(url);
  if (!isLoopback(hostname)) return null;
  const pid = await platform.listener(Number(port || (protocol === 'https:' ? 443 : 80)));
  if (pid === null) return null;
  const [listener] = await platform.processes([pid]);
  const program = listener ? basename(listener.command.split(' ')[0]!) : '';
  return PORT_FORWARDERS.has(program) ? { forwarder: program } : { pid };
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** LocalAI's processes found here, and the directories its other backend processes run from (another backends directory). */
export interface ServerProcesses {
  found: ServerProcess[];
  elsewhere: string[];
}

/**
 * Every process of the LocalAI server on this machine, with the backend each runs and whether from its live tree:
 * LocalAI's children when its pid is known, else any that fits. With its pid known, its backend processes whose cwd
 * is none of this node's directories are named too. `inContainer`: LocalAI is behind a container's port forwarder,
 * where its backends directory is a volume seen under another path: a deleted cwd anywhere, named like a backend's,
 * is then one of its. Otherwise such a cwd is some other program's (another home's backend, say), never LocalAI's.
 */
export async function findServerProcesses(platform: Platform, backendsDir: string, own: Set<number>, serverPid: number | null, inContainer = false): Promise<ServerProcesses> {
  const cwds = [...(await platform.cwds())].filter(([pid]) => !own.has(pid) && pid !== process.pid);
  // Read after the cwds (the slow part under the POSIX layer, one lsof): a swap meanwhile makes its tree one set aside.
  const dirs = backendDirectories(backendsDir);
  const places = new Map(cwds.map(([pid, cwd]) => [pid, placeIn(backendsDir, dirs, cwd, inContainer)]));
  // Only LocalAI's children that run from elsewhere need their parent read besides those in a backend's directory.
  const parents = serverPid === null ? new Map<number, { ppid: number }>() : await platform.statuses(cwds.map(([pid]) => pid));
  const asked = cwds.filter(([pid]) => places.get(pid) || parents.get(pid)?.ppid === serverPid).map(([pid]) => pid);
  const entries = new Map((await platform.processes(asked)).map((p) => [p.pid, p]));
  const found: ServerProcess[] = [];
  const elsewhere = new Set<string>();
  for (const [pid, cwd] of cwds) {
    const entry = entries.get(pid);
    if (!entry) continue;
    const place = places.get(pid);
    if (!place) {
      if (ADDR.test(entry.command)) elsewhere.add(dirname(cwd.path));
      continue;
    }
    const port = ADDR.exec(entry.command)?.[1];
    if (port === undefined) continue;
    const identity = cwd.dev !== null && cwd.ino !== null ? { dev: cwd.dev, ino: cwd.ino } : null;
    found.push({ pid, ppid: entry.ppid, backend: place.backend, port: Number(port), startedAt: entry.startedAt, cwd: shownCwd(cwd), identity, stale: place.stale });
  }
  return { found: serverPid === null ? found : found.filter((p) => p.ppid === serverPid), elsewhere: [...elsewhere].sort() };
}

/** The cwd as /proc/PID/cwd reads it: a removed directory's path with " (deleted)". */
function shownCwd(cwd: ProcessCwd): string {
  return cwd.deleted ? `${cwd.path}${DELETED}` : cwd.path;
}

interface Directory {
  backend: string;
  live: boolean;
  path: string;
}

/** The backend directories by identity: each live one, and each a swap set aside (LocalAI's and Hangar's). */
function backendDirectories(backendsDir: string): Map<string, Directory> {
  const dirs = new Map<string, Directory>();
  const add = (path: string, backend: string, live: boolean) => {
    try {
      const st = statSync(path, { bigint: true });
      if (st.isDirectory()) dirs.set(`${st.dev}:${st.ino}`, { backend, live, path });
    } catch {
      // removed while it was read
    }
  };
  for (const name of list(backendsDir)) {
    if (name === '.hangar') continue;
    const place = placeOf(name);
    add(join(backendsDir, name), place.backend, !place.aside);
  }
  for (const area of list(join(backendsDir, '.hangar'))) {
    for (const name of list(join(backendsDir, '.hangar', area))) add(join(backendsDir, '.hangar', area, name), placeOf(join('.hangar', area, name)).backend, false);
  }
  return dirs;
}

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Which backend a cwd belongs to, and why it is not that backend's live tree; null when it is none of them. */
function placeIn(backendsDir: string, dirs: Map<string, Directory>, cwd: ProcessCwd, inContainer: boolean): { backend: string; stale: string | null } | null {
  const known = cwd.dev !== null && cwd.ino !== null && !cwd.deleted ? dirs.get(`${cwd.dev}:${cwd.ino}`) : undefined;
  if (known) return { backend: known.backend, stale: known.live ? null : `it runs from ${relative(backendsDir, known.path)}, a tree a swap set aside` };
  const { path, deleted } = cwd;
  const link = shownCwd(cwd);
  if (path.startsWith(backendsDir + sep)) {
    const place = placeOf(relative(backendsDir, path));
    if (deleted || place.aside) return { backend: place.backend, stale: staleWords(link, deleted) };
    return null;
  }
  // Not this machine's path for it (a container's view of a volume): a deleted cwd named like a backend's is one.
  return deleted && inContainer ? { backend: placeOf(basename(path)).backend, stale: staleWords(link, true) } : null;
}

function staleWords(link: string, deleted: boolean): string {
  return deleted ? `its directory was replaced and deleted: /proc/PID/cwd is ${link}` : `it runs from ${link}, a tree a swap set aside`;
}
