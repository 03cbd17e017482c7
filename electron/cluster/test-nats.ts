// A real nats-server for tests: Debian's package, on 127.0.0.1 and a port it picks itself, with JetStream on (the
// cluster keeps its desired state and rollouts there), as the README starts it (tests only).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface NatsServer {
  child: ChildProcess;
  url: string;
  /** The monitoring endpoint's base URL, when started with `-m -1`. */
  monitor: string | null;
  /** JetStream's directory: a server started again on it finds the cluster's state. */
  storeDir: string | null;
  /** Stops the server; its store is removed unless `keepStore` (to start it again on the same store). */
  stop(options?: { keepStore?: boolean }): Promise<void>;
}

/**
 * `port` starts it again where a stopped one listened, `storeDir` on the store it kept; by default it picks a free
 * port and a store of its own. `jetStream: false` starts a server that keeps no state.
 */
export async function startNats(args: string[] = [], port = -1, storeDir?: string, jetStream = true): Promise<NatsServer> {
  const store = jetStream ? (storeDir ?? (await mkdtemp(join(tmpdir(), 'hangar-nats-store-')))) : null;
  const server = await runNats(['-a', '127.0.0.1', '-p', String(port), ...(store ? ['-js', '-sd', store] : []), ...args]);
  return {
    ...server,
    storeDir: store,
    stop: async (options = {}) => {
      await server.stop();
      if (store && !options.keepStore) await rm(store, { recursive: true, force: true });
    },
  };
}

/** nats-server with exactly these arguments (a configuration that names its own 127.0.0.1 address). */
export async function runNats(args: string[]): Promise<NatsServer> {
  const child = spawn('nats-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const lines = createInterface({ input: child.stderr! });
  let monitor: string | null = null;
  const url = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`nats-server exited with ${code}`)));
    lines.on('line', (line) => {
      const monitoring = /Starting http monitor on (127\.0\.0\.1:\d+)/.exec(line);
      if (monitoring) monitor = `http://${monitoring[1]}`;
      const match = /Listening for client connections on (127\.0\.0\.1:\d+)/.exec(line);
      if (match) resolve(`nats://${match[1]}`);
    });
  });
  return {
    child,
    url,
    monitor,
    storeDir: null,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
