// Test-only: a real CNCF distribution registry (Debian's `docker-registry`) on 127.0.0.1, optionally behind
// htpasswd Basic auth, in a temp directory that `stop()` removes.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestRegistry {
  /** `127.0.0.1:PORT`, as it appears in image references. */
  host: string;
  /** `http://127.0.0.1:PORT`. */
  url: string;
  stop(): Promise<void>;
}

export interface RegistryOptions {
  htpasswd?: { username: string; password: string };
}

const START_TIMEOUT_MS = 15_000;
const START_ATTEMPTS = 3;

export async function startRegistry(options: RegistryOptions = {}): Promise<TestRegistry> {
  const dir = await mkdtemp(join(tmpdir(), 'hangar-registry-'));
  try {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      await writeFile(join(dir, 'config.yml'), await config(dir, port, options));
      const child = spawn('docker-registry', ['serve', join(dir, 'config.yml')], { stdio: ['ignore', 'ignore', 'pipe'] });
      try {
        await listening(child, port);
      } catch (err) {
        await kill(child);
        if (attempt >= START_ATTEMPTS) throw err;
        continue;
      }
      return {
        host: `127.0.0.1:${port}`,
        url: `http://127.0.0.1:${port}`,
        async stop() {
          await kill(child);
          await rm(dir, { recursive: true, force: true });
        },
      };
    }
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

async function config(dir: string, port: number, { htpasswd }: RegistryOptions): Promise<string> {
  const lines = [
    'version: 0.1',
    'log:',
    '  level: info',
    '  accesslog:',
    '    disabled: true',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${join(dir, 'data')}`,
    '  delete:',
    '    enabled: true',
    'http:',
    `  addr: 127.0.0.1:${port}`,
    '  secret: hangar-test',
  ];
  if (htpasswd) {
    const hashed = spawnSync('htpasswd', ['-Bbn', htpasswd.username, htpasswd.password], { encoding: 'utf8' });
    if (hashed.status !== 0) throw new Error(`htpasswd failed: ${hashed.stderr}`);
    await writeFile(join(dir, 'htpasswd'), hashed.stdout);
    lines.push('auth:', '  htpasswd:', '    realm: hangar-test', `    path: ${join(dir, 'htpasswd')}`);
  }
  return lines.join('\n') + '\n';
}

/** Resolves once the registry logs that it listens on `port`; rejects if it exits or stays silent. */
function listening(child: ChildProcess, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => done(new Error(`docker-registry did not start in ${START_TIMEOUT_MS} ms: ${log}`)), START_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-4000);
      if (log.includes(`listening on 127.0.0.1:${port}`)) done(null);
    };
    const onExit = (code: number | null) => done(new Error(`docker-registry exited (${code}): ${log}`));
    function done(err: Error | null) {
      clearTimeout(timer);
      child.off('exit', onExit);
      if (err) {
        child.stderr!.off('data', onData);
        reject(err);
        return;
      }
      // Keep draining its log so the pipe never fills.
      child.stderr!.off('data', onData).resume();
      resolve();
    }
    child.stderr!.on('data', onData);
    child.once('exit', onExit);
    child.once('error', (err) => done(err));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}
