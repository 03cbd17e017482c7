// Starting one backend process: `<dir>/run.sh --addr 127.0.0.1:PORT` in its own process group, cwd = its dir.
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { Result, ResultPromise } from 'execa';
import { HangarError } from '../../../shared/index.ts';
import { RUN_SH, makeRunnable } from '../install/run-file.ts';
import type { Platform } from '../platform/types.ts';
import { dirIdentity, type DirIdentity } from './identity.ts';
import { startTimeOf } from './signals.ts';

export interface SpawnRequest {
  backend: string;
  model: string;
  dir: string;
  port: number;
  /** The cgroup to start it in (it joins before run.sh runs, so everything run.sh forks is in it too), or null. */
  cgroup: string | null;
  env: Record<string, string | undefined>;
  onLine(stream: 'stdout' | 'stderr', text: string): void;
  /** A process spawned ahead, in `cgroup` with `env` already, to become this backend, or none. */
  shell?: SpawnedAhead | null;
}

/** A process spawned before its start was asked for (warm-shell.ts): told where, it becomes the backend. */
export interface SpawnedAhead {
  child: ResultPromise;
  exit: Promise<{ code: number | null; signal: string | null }>;
  /** Resolves once it is in the backend's directory, or has exited. */
  go(dir: string, port: number): Promise<void>;
}

export interface Spawned {
  child: ResultPromise;
  /** Settles (never rejects) once the process has exited and been reaped, and its pipes have closed. */
  result: Promise<Result>;
  /** Resolves when the process itself exits, even while something it forked still holds its pipes. */
  exit: Promise<{ code: number | null; signal: string | null }>;
  /** Resolves once every line the process wrote to stdout and stderr has been delivered to onLine. */
  drained: Promise<void>;
  /** Stops the process and its pipes from keeping the host's event loop alive. */
  detach(): void;
  pid: number;
  identity: DirIdentity;
  startTime: string | null;
  cgroup: string | null;
}

/** A shell's part that moves the shell into the cgroup `$0`; a cgroup it cannot join is said in the log. */
export const JOIN_CGROUP = '{ echo 0 > "$0/cgroup.procs"; } 2>/dev/null || echo "hangar: could not join cgroup $0" >&2';

/** What run.sh is started with (LocalAI's backend protocol). */
export function backendArgs(port: number | string): string[] {
  return ['--addr', `127.0.0.1:${port}`];
}

export async function spawnBackend(platform: Platform, req: SpawnRequest): Promise<Spawned> {
  const runSh = join(req.dir, RUN_SH);
  await makeRunnable(runSh).catch((err: unknown) => {
    throw new HangarError('failed', `backend ${req.backend} could not start for model ${req.model}: ${RUN_SH} is not executable and cannot be made so: ${(err as Error).message}`);
  });
  const { child, exit } = req.shell ?? (await spawnDirect(req, runSh, platform.leaderSetup));
  const pid = child.pid;
  const result = child as Promise<Result>;
  // Read from the first byte: lines a backend writes while dying during startup make its error message.
  const drained = Promise.all([
    streamLines(child.stdout, (text) => req.onLine('stdout', text)),
    streamLines(child.stderr, (text) => req.onLine('stderr', text)),
  ]).then(() => undefined);
  if (pid === undefined) {
    const failed = await result;
    throw new HangarError('failed', `backend ${req.backend} could not start for model ${req.model}: ${failed.shortMessage ?? failed.message}`);
  }
  await req.shell?.go(req.dir, req.port);
  // Both read right away, before anything can rename the directory: the start time names this process for
  // re-adoption, and the identity is taken from the process's own cwd where the OS shows it, so even a swap racing
  // the spawn is recorded truthfully (and then reads as stale).
  const [startTime, cwd] = await Promise.all([startTimeOf(platform, pid), platform.cwds([pid])]);
  const own = cwd.get(pid);
  const identity = own?.dev != null && own.ino != null ? { dir: req.dir, dev: own.dev, ino: own.ino } : await dirIdentity(req.dir);
  if (!identity) {
    child.kill('SIGKILL');
    await result;
    throw new HangarError('failed', `backend ${req.backend} could not start for model ${req.model}: ${req.dir} is gone`);
  }
  const detach = () => {
    child.unref();
    for (const stream of [child.stdout, child.stderr]) (stream as Socket | null)?.unref();
  };
  return { child, result, exit, drained, detach, pid, identity, startTime, cgroup: req.cgroup };
}

/**
 * Run as `sh -c 'JOIN_CGROUP; exec "$@"' CGROUP RUN_SH ARGS...` where there is a cgroup: the shell moves itself into
 * it, then becomes run.sh (same pid), so everything run.sh forks is in it too. The platform layer's `setup` runs in
 * that shell too.
 */
async function spawnDirect(req: SpawnRequest, runSh: string, setup: string): Promise<{ child: ResultPromise; exit: Spawned['exit'] }> {
  const { execa } = await import('execa');
  const args = backendArgs(req.port);
  const parts = [...(req.cgroup ? [JOIN_CGROUP] : []), ...(setup ? [setup] : [])];
  const [file, argv] = parts.length > 0 ? ['/bin/sh', ['-c', `${parts.join('; ')}; exec "$@"`, req.cgroup ?? '', runSh, ...args]] : [runSh, args];
  const child = execa(file, argv, {
    cwd: req.dir,
    env: req.env,
    detached: true,
    cleanup: true,
    reject: false,
    buffer: false,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const exit = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, exit };
}

async function streamLines(stream: Readable | null, onLine: (text: string) => void): Promise<void> {
  if (!stream) return;
  const lines = createInterface({ input: stream, crlfDelay: Infinity }).on('line', onLine);
  await once(lines, 'close');
}
