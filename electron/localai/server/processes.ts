// A LocalAI server's backend processes, found on this machine: LocalAI starts each model as `run.sh --addr
// 127.0.0.1:PORT` with its cwd the backend's directory, as a child of its own process (pkg/model/initializers.go,
// process.go). A process is LocalAI's when Hangar does not supervise it, its command carries `--addr`, and its cwd is
// one of this node's backend directories, live or replaced, told by the cwd's identity (so a LocalAI in a container
// whose backends directory is a volume counts too) or by its path. When the process listening on the server's port is
// the parent of some of them, only its children count (behind a container's port mapping, the listener is a proxy
// with no such children, and all of them count).
import { readdirSync, statSync } from 'node:fs';
import { basename, join, relative, sep } from 'node:path';
import { placeOf, readCommand, readCwd } from '../../core/supervisor/scan.ts';
import { procStat } from '../../core/supervisor/identity.ts';

export interface ServerProcess {
  pid: number;
  ppid: number;
  /** The backend directory it runs from, by name (`echo` for a replaced `echo.backup` too). */
  backend: string;
  port: number;
  /** What the OS says its cwd is, and the cwd's identity when it can be read. */
  cwd: string;
  identity: { dev: bigint; ino: bigint } | null;
  /** Why it does not run from its backend's live tree, or null when it does. */
  stale: string | null;
}

const DELETED = ' (deleted)';
const ADDR = /(?:^|\s)--addr(?:=|\s+)\S*:(\d{1,5})(?:\s|$)/;

/** Every process of the LocalAI server on this machine, with the backend each runs and whether from its live tree. */
export function findServerProcesses(backendsDir: string, own: Set<number>, serverPid: number | null): ServerProcess[] {
  const dirs = backendDirectories(backendsDir);
  const found: ServerProcess[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || own.has(pid) || pid === process.pid) continue;
    const cwd = readCwd(pid);
    if (!cwd) continue;
    const place = placeIn(backendsDir, dirs, cwd.link, cwd.stat);
    if (!place) continue;
    const port = ADDR.exec(readCommand(pid))?.[1];
    const ppid = procStat(pid)?.ppid;
    if (port === undefined || ppid === undefined) continue;
    const identity = cwd.stat && { dev: cwd.stat.dev, ino: cwd.stat.ino };
    found.push({ pid, ppid, backend: place.backend, port: Number(port), cwd: cwd.link, identity, stale: place.stale });
  }
  return found.some((p) => p.ppid === serverPid) ? found.filter((p) => p.ppid === serverPid) : found;
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
function placeIn(backendsDir: string, dirs: Map<string, Directory>, link: string, stat: { dev: bigint; ino: bigint; nlink: bigint } | null): { backend: string; stale: string | null } | null {
  const known = stat ? dirs.get(`${stat.dev}:${stat.ino}`) : undefined;
  if (known) return { backend: known.backend, stale: known.live ? null : `it runs from ${relative(backendsDir, known.path)}, a tree a swap set aside` };
  const path = link.endsWith(DELETED) ? link.slice(0, -DELETED.length) : link;
  const deleted = link.endsWith(DELETED) || stat?.nlink === 0n;
  if (path.startsWith(backendsDir + sep)) {
    const place = placeOf(relative(backendsDir, path));
    if (deleted || place.aside) return { backend: place.backend, stale: staleWords(link, deleted) };
    return null;
  }
  // Not this machine's path for it (a container's view of a volume): a deleted cwd named like a backend's is one.
  return deleted ? { backend: placeOf(basename(path)).backend, stale: staleWords(link, true) } : null;
}

function staleWords(link: string, deleted: boolean): string {
  return deleted ? `its directory was replaced and deleted: /proc/PID/cwd is ${link}` : `it runs from ${link}, a tree a swap set aside`;
}
