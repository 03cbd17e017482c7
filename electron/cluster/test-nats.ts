// A real nats-server for tests: Debian's package, on 127.0.0.1 and a port it picks itself (tests only).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

export interface NatsServer {
  child: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

/** `port` starts it again where a stopped one listened; by default it picks a free port. */
export async function startNats(args: string[] = [], port = -1): Promise<NatsServer> {
  return runNats(['-a', '127.0.0.1', '-p', String(port), ...args]);
}

/** nats-server with exactly these arguments (a configuration that names its own 127.0.0.1 address). */
export async function runNats(args: string[]): Promise<NatsServer> {
  const child = spawn('nats-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const lines = createInterface({ input: child.stderr! });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`nats-server exited with ${code}`)));
    lines.on('line', (line) => {
      const match = /Listening for client connections on (127\.0\.0\.1:\d+)/.exec(line);
      if (match) resolve(`nats://${match[1]}`);
    });
  });
  return {
    child,
    url,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
