// One host per home. A host (agent or desktop app) takes this lock before it reads or writes anything in the
// home and holds it for its life. The lock is a machine-wide name (see machine-name.ts: an abstract unix socket on
// Linux) made from the sha256 of the home's real path. Binding it is atomic, the kernel drops it the moment the
// host dies (even by SIGKILL: no stale lock file, no pid-file guessing), and a second host can connect to it to
// ask who holds the home and where it serves. Node has no flock(2), which rules out a plain lock file.
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { createConnection, type Server } from 'node:net';
import { basename, dirname, join, resolve } from 'node:path';
import { holdName, nameAddress } from './machine-name.ts';

export interface HomeHolder {
  /** null when the holder did not answer in time. */
  pid: number | null;
  /** Where the holder serves its UI and API; null for a host that does not serve HTTP (or has not started to yet). */
  url: string | null;
}

const ASK_LIMIT_MS = 2000;

export class HomeBusyError extends Error {
  constructor(readonly holder: HomeHolder) {
    const who = holder.pid === null ? 'another hangar' : `hangar (pid ${holder.pid})`;
    super(`${who} already serves this home${holder.url ? ` at ${holder.url}` : ''}`);
  }
}

export class HomeLock {
  private url: string | null = null;
  private server: Server | null = null;

  private constructor() {}

  /** The lock at `address`, or null when another process holds it. */
  static async take(address: string): Promise<HomeLock | null> {
    const lock = new HomeLock();
    lock.server = await holdName(address, (socket) => socket.end(JSON.stringify({ pid: process.pid, url: lock.url }) + '\n'));
    return lock.server ? lock : null;
  }

  /** Tells a second host that asks where this one serves. */
  serving(url: string): void {
    this.url = url;
  }

  /** Gives the home up (a host's clean exit; a dead host's lock goes with it anyway). */
  release(): Promise<void> {
    return new Promise((done) => (this.server ? this.server.close(() => done()) : done()));
  }
}

/** Takes the home's lock, or throws HomeBusyError naming the host that holds it. */
export async function lockHome(home: string): Promise<HomeLock> {
  const address = lockAddress(home);
  const lock = await HomeLock.take(address);
  if (lock) return lock;
  throw new HomeBusyError(await askHolder(address));
}

/** The lock's address for a home: the same for every spelling of the path (symlinks, `..`, a trailing /). */
export function lockAddress(home: string): string {
  const hash = createHash('sha256').update(realHome(home)).digest('hex');
  // Socket paths are short on macOS (104 bytes) and its temp directory is long: half the hash is plenty.
  return nameAddress(`hangar-home-${process.platform === 'darwin' ? hash.slice(0, 32) : hash}`);
}

/** The home's real path; a home not created yet is its nearest existing ancestor's real path plus the rest. */
function realHome(home: string): string {
  const path = resolve(home);
  try {
    return realpathSync(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(realHome(parent), basename(path));
  }
}

function askHolder(address: string): Promise<HomeHolder> {
  return new Promise((done) => {
    const socket = createConnection({ path: address });
    let text = '';
    const give = (holder: HomeHolder) => {
      socket.destroy();
      done(holder);
    };
    socket.setTimeout(ASK_LIMIT_MS, () => give({ pid: null, url: null }));
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    socket.on('end', () => give(parseHolder(text)));
    socket.on('error', () => give({ pid: null, url: null }));
  });
}

function parseHolder(text: string): HomeHolder {
  try {
    const { pid, url } = JSON.parse(text) as { pid?: unknown; url?: unknown };
    return { pid: Number.isInteger(pid) ? (pid as number) : null, url: typeof url === 'string' ? url : null };
  } catch {
    return { pid: null, url: null };
  }
}
