// One `local-ai run` process: LocalAI's own flags (core/cli/run.go) on the command line, its API key only in
// LOCALAI_API_KEY, its output into the kept log lines. A stop is SIGINT (LocalAI's graceful shutdown), then SIGTERM,
// then SIGKILL, each after its grace. LocalAI leads a session of its own, and its processes (the model processes it
// starts, each in a process group of its own) are noted while it runs: whatever it leaves behind when it ends, a
// crash above all, is found by its session or by that note and killed, rather than left holding memory and ports.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { currentPlatform, type Member } from '../../core/platform/index.ts';
import { alive, settlesWithin, signalTree, startTimeOf } from '../../core/supervisor/index.ts';
import type { LogLines } from './log-lines.ts';

export interface LaunchSpec {
  binary: string;
  port: number;
  backendsPath: string;
  modelsPath: string;
  apiKey: string;
  /** LocalAI keeps its configuration and data relative to its working directory. */
  cwd: string;
  logs: LogLines;
}

/** How long LocalAI may take after SIGINT (it waits for busy models), then after SIGTERM. */
export const DEFAULT_STOP_GRACE = { interruptMs: 20_000, terminateMs: 5_000 };

/** How often LocalAI's processes are noted: a model process started and orphaned within it may be missed. */
const NOTE_PROCESSES_MS = 500;

export interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  uptimeMs: number;
}

export interface LocalAiProcess {
  pid: number;
  /** Its start time as the platform layer tells it (null once it has ended), with the pid naming it for good. */
  startTime: string | null;
  url: string;
  startedAt: number;
  ended: Promise<Ended>;
  stop(): Promise<Ended>;
  /** Its own processes (its models), as last noted. */
  processes(): number;
  /** Kills what is left of it once it has ended (its model processes); resolves with how many. */
  killLeftovers(): Promise<number>;
}

/** Starts LocalAI listening on 127.0.0.1:`port`; fails only when the binary cannot be executed at all. */
export async function launchLocalAi(spec: LaunchSpec): Promise<LocalAiProcess> {
  const args = ['run', '--address', `127.0.0.1:${spec.port}`, '--backends-path', spec.backendsPath, '--models-path', spec.modelsPath];
  const child = spawn(spec.binary, args, { cwd: spec.cwd, env: localAiEnv(spec.apiKey), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const startedAt = Date.now();
  child.stdout.on('data', (chunk: Buffer) => spec.logs.write('stdout', chunk));
  child.stderr.on('data', (chunk: Buffer) => spec.logs.write('stderr', chunk));
  const ended = new Promise<Ended>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, uptimeMs: Date.now() - startedAt })));
  // `once` rejects with the 'error' event's own error, a bare errno: said in words instead.
  await once(child, 'spawn').catch((error: NodeJS.ErrnoException) => {
    throw new Error(`cannot run ${spec.binary}: ${error.code === 'EACCES' ? 'permission denied' : error.code === 'ENOENT' ? 'it is not there' : (error.code ?? error.message)}`);
  });
  const pid = child.pid!;
  const platform = currentPlatform();
  const leader = { pid, startTime: await startTimeOf(platform, pid), cgroup: null };
  const noted = new Map<number, Member>();
  const note = async () => {
    const [tree] = await platform.trees([leader]);
    for (const member of tree!) if (member.pid !== pid) noted.set(member.pid, member);
    const live = new Set(await alive(platform, [...noted.values()]));
    for (const member of noted.values()) if (!live.has(member)) noted.delete(member.pid);
  };
  // One note at a time; one that fails (a `ps` that could not run) leaves the last one standing, and never an
  // unhandled rejection in a host that runs LocalAI.
  let noting: Promise<void> = Promise.resolve();
  const noteNext = () => (noting = noting.then(note).catch(() => undefined));
  const timer = setInterval(noteNext, NOTE_PROCESSES_MS).unref();
  void ended.then(() => clearInterval(timer));
  return {
    pid,
    startTime: leader.startTime,
    url: `http://127.0.0.1:${spec.port}`,
    startedAt,
    ended,
    async stop() {
      for (const [signal, ms] of [['SIGINT', DEFAULT_STOP_GRACE.interruptMs], ['SIGTERM', DEFAULT_STOP_GRACE.terminateMs]] as const) {
        if (child.exitCode !== null || child.signalCode !== null) break;
        spec.logs.note(`sending ${signal} to LocalAI (pid ${pid})`);
        child.kill(signal);
        if (await settlesWithin(ended, ms)) return ended;
      }
      if (child.exitCode === null && child.signalCode === null) {
        spec.logs.note(`LocalAI (pid ${pid}) did not stop: SIGKILL`);
        child.kill('SIGKILL');
      }
      return ended;
    },
    processes() {
      return noted.size;
    },
    async killLeftovers() {
      await noteNext();
      const left = await alive(platform, [...noted.values()]);
      await signalTree(platform, left, 'SIGKILL');
      noted.clear();
      return left.length;
    },
  };
}

/** The agent's environment for LocalAI, without Hangar's own secrets, with its API key. */
function localAiEnv(apiKey: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('HANGAR_') && name !== 'API_KEY') env[name] = value;
  env.LOCALAI_API_KEY = apiKey;
  return env;
}

/** What a stop or an end says of the model processes LocalAI left behind, killed after it. */
export function leftoversText(killed: number): string {
  return killed > 0 ? `; killed ${killed} process${killed === 1 ? '' : 'es'} it left (its models)` : '';
}
