// One `local-ai run` process: LocalAI's own flags (core/cli/run.go) on the command line, its API key only in
// LOCALAI_API_KEY, its output into the kept log lines. A stop is SIGINT (LocalAI's graceful shutdown), then SIGTERM,
// then SIGKILL, each after its grace.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { settlesWithin } from '../../core/supervisor/tree-stop.ts';
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

export interface StopGrace {
  /** How long LocalAI may take after SIGINT (it waits for busy models), then after SIGTERM. */
  interruptMs: number;
  terminateMs: number;
}

export const DEFAULT_STOP_GRACE: StopGrace = { interruptMs: 20_000, terminateMs: 5_000 };

export interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  uptimeMs: number;
}

export interface LocalAiProcess {
  pid: number;
  url: string;
  startedAt: number;
  ended: Promise<Ended>;
  stop(grace?: StopGrace): Promise<Ended>;
}

/** Starts LocalAI listening on 127.0.0.1:`port`; fails only when the binary cannot be executed at all. */
export async function launchLocalAi(spec: LaunchSpec): Promise<LocalAiProcess> {
  const args = ['run', '--address', `127.0.0.1:${spec.port}`, '--backends-path', spec.backendsPath, '--models-path', spec.modelsPath];
  const child = spawn(spec.binary, args, { cwd: spec.cwd, env: localAiEnv(spec.apiKey), stdio: ['ignore', 'pipe', 'pipe'] });
  const startedAt = Date.now();
  child.stdout.on('data', (chunk: Buffer) => spec.logs.write('stdout', chunk));
  child.stderr.on('data', (chunk: Buffer) => spec.logs.write('stderr', chunk));
  const ended = new Promise<Ended>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, uptimeMs: Date.now() - startedAt })));
  await Promise.race([once(child, 'spawn'), once(child, 'error').then(([error]) => Promise.reject(new Error(`cannot run ${spec.binary}: ${(error as Error).message}`)))]);
  const pid = child.pid!;
  return {
    pid,
    url: `http://127.0.0.1:${spec.port}`,
    startedAt,
    ended,
    async stop(grace = DEFAULT_STOP_GRACE) {
      for (const [signal, ms] of [['SIGINT', grace.interruptMs], ['SIGTERM', grace.terminateMs]] as const) {
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
  };
}

/** The agent's environment for LocalAI, without Hangar's own secrets, with its API key. */
function localAiEnv(apiKey: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('HANGAR_') && name !== 'API_KEY') env[name] = value;
  env.LOCALAI_API_KEY = apiKey;
  return env;
}
