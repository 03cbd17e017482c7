// One host per home. A host (agent or desktop app) takes this lock before it reads or writes anything in the
// home and holds it for its life. The lock is a listening socket named from the sha256 of the home's real path:
// an abstract unix socket on Linux, a named pipe on Windows. Binding is atomic, the kernel drops the name the
// moment the host dies (even by SIGKILL: no stale lock file, no pid-file guessing), and a second host can connect
// to it to ask who holds the home and where it serves. Node has no flock(2), which rules out a lock file. Where
// neither namespace exists (macOS), a socket file in the temp directory plays the same part; one a dead host left
// behind refuses connections and is replaced.
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

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

  constructor(
    private readonly server: Server,
    readonly address: string,
  ) {
    server.on('connection', (socket) => {
      socket.on('error', () => undefined);
      socket.end(JSON.stringify({ pid: process.pid, url: this.url }) + '\n');
    });
  }

  /** Tells a second host that asks where this one serves. */
  serving(url: string): void {
    this.url = url;
  }

  /** Gives the home up (a host's clean exit; a dead host's lock goes with it anyway). */
  release(): Promise<void> {
    return new Promise((done) => this.server.close(() => done()));
  }
}

/** Takes the home's lock, or throws HomeBusyError naming the host that holds it. */
export async function lockHome(home: string): Promise<HomeLock> {
  const address = lockAddress(home);
  try {
    return await listen(address);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
  }
  const holder = await askHolder(address);
  if (holder !== 'gone' || !isSocketFile(address)) throw new HomeBusyError(holder === 'gone' ? { pid: null, url: null } : holder);
  // Only a socket file can outlive its host: remove it and bind once more (a racing host may win; it then holds).
  await unlink(address).catch(() => undefined);
  try {
    return await listen(address);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    throw new HomeBusyError(await askHolder(address).then((h) => (h === 'gone' ? { pid: null, url: null } : h)));
  }
}

/** The lock's socket address for a home: the same for every spelling of the path (symlinks, `..`, a trailing /). */
export function lockAddress(home: string): string {
  const hash = createHash('sha256').update(realHome(home)).digest('hex');
  if (process.platform === 'linux') return `\0hangar-home-${hash}`;
  if (process.platform === 'win32') return `\\\\.\\pipe\\hangar-home-${hash}`;
  // Socket paths are short on macOS (104 bytes) and its temp directory is long: half the hash is plenty.
  return join(tmpdir(), `hangar-${hash.slice(0, 32)}.sock`);
}

const isSocketFile = (address: string) => !address.startsWith('\0') && !address.startsWith('\\\\');

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

function listen(address: string): Promise<HomeLock> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen({ path: address, exclusive: true }, () => {
      server.off('error', fail);
      // The lock must not keep a host alive on its own.
      server.unref();
      done(new HomeLock(server, address));
    });
  });
}

/** The holder's answer; 'gone' when nothing listens (a socket file whose host died). */
function askHolder(address: string): Promise<HomeHolder | 'gone'> {
  return new Promise((done) => {
    const socket = createConnection({ path: address });
    let text = '';
    const give = (answer: HomeHolder | 'gone') => {
      socket.destroy();
      done(answer);
    };
    socket.setTimeout(ASK_LIMIT_MS, () => give({ pid: null, url: null }));
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    socket.on('end', () => give(parseHolder(text)));
    socket.on('error', (error: NodeJS.ErrnoException) =>
      give(error.code === 'ECONNREFUSED' || error.code === 'ENOENT' ? 'gone' : { pid: null, url: null }),
    );
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
