// A name held machine-wide by one process at a time, released by the OS when that process dies: a listening
// socket in Linux's abstract namespace, or a Windows named pipe. Both vanish with their process (even on SIGKILL),
// so nothing stale is ever left to clean. Where neither exists (macOS), a socket file in the temp directory stands
// in; one left by a dead process refuses connections and is replaced.
import { unlink } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function nameAddress(name: string): string {
  if (process.platform === 'linux') return `\0${name}`;
  if (process.platform === 'win32') return `\\\\.\\pipe\\${name}`;
  return join(tmpdir(), `${name}.sock`);
}

/**
 * Holds `address`, or resolves null when a live process holds it. `onConnection` answers whoever connects.
 * The server never keeps the process alive on its own.
 */
export async function holdName(address: string, onConnection: (socket: Socket) => void = (s) => s.destroy()): Promise<Server | null> {
  const first = await listen(address, onConnection);
  if (first !== null || !isSocketFile(address) || (await answers(address))) return first;
  // A socket file whose process died: remove it and bind once more (a process racing for it may win; it then holds).
  await unlink(address).catch(() => undefined);
  return listen(address, onConnection);
}

function listen(address: string, onConnection: (socket: Socket) => void): Promise<Server | null> {
  return new Promise((done, fail) => {
    const server = createServer((socket) => {
      socket.on('error', () => undefined);
      onConnection(socket);
    });
    server.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? done(null) : fail(error)));
    server.listen({ path: address, exclusive: true }, () => {
      server.unref();
      done(server);
    });
  });
}

const isSocketFile = (address: string) => !address.startsWith('\0') && !address.startsWith('\\\\');

/** True when something accepts connections at a socket file. */
function answers(address: string): Promise<boolean> {
  return new Promise((done) => {
    const socket = createConnection({ path: address });
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code !== 'ECONNREFUSED' && error.code !== 'ENOENT'));
  });
}
