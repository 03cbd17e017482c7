// Drives a real `hangar agent` process and the CLI, as a user does (tests only).
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable, Writable } from 'node:stream';
import { promisify } from 'node:util';
import { LOCAL_NODE } from '../../shared/api.ts';
import type { WireClient } from '../../shared/wire-client.ts';
import { type CliIo, withCliIo } from './cli-io.ts';
import { connect } from './connect.ts';
import { failureStatus, runCommand } from './run-command.ts';
export { until } from '../core/testing/until.ts';

const CLI = resolve('dist/agent/cli.js');
const run = promisify(execFile);

export interface Agent {
  child: ChildProcess;
  url: string;
  home: string;
}

/**
 * `gallery` null: the node reads the galleries of its settings. `openFiles` lowers the agent's open-file limit
 * (through util-linux's prlimit, which execs it: the pid is the agent's). `user` runs it as another uid and gid (as
 * root, every file is readable); its home must be theirs.
 */
export async function startAgent(
  home: string,
  gallery: string | null,
  extra: string[] = [],
  env: NodeJS.ProcessEnv = process.env,
  openFiles?: number,
  user: { uid?: number; gid?: number } = {},
): Promise<Agent> {
  const galleries = gallery === null ? [] : ['--gallery', gallery];
  const command = [process.execPath, CLI, 'agent', '--home', home, ...galleries, '--listen', '127.0.0.1:0', ...extra];
  if (openFiles !== undefined) command.unshift('prlimit', `--nofile=${openFiles}:${openFiles}`);
  const child = spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env, ...user });
  const lines = createInterface({ input: child.stdout! });
  // An agent that refuses its arguments exits without a line: that is said, not waited on for ever (its stderr is
  // left for the test to read).
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    lines.once('close', () => reject(new Error(`the agent exited before it listened (${command.slice(1).join(' ')})`)));
  });
  const match = /^hangar agent listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(first);
  assert.ok(match, `unexpected first line: ${first}`);
  return { child, url: match[1]!, home };
}

export async function hangar(agent: Agent, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return cli('--node', agent.url, '--home', agent.home, ...args);
}

/** The CLI answering its question (a confirmation) with `answer` on stdin. */
export function answering(agent: Agent, answer: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return withStdin(agent, answer, ...args);
}

/** The CLI with `input` on its stdin. */
export async function withStdin(agent: Agent, input: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, '--node', agent.url, '--home', agent.home, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin!.end(input);
  const [code] = (await once(child, 'exit')) as [number];
  return { code, stdout, stderr };
}

/**
 * A CLI run. In this process by default: the command's own code against the real agent, as a `hangar` process runs it,
 * without starting Node for it (a `hangar` process costs about 0.3 s of CPU, most of the test run's). A file that
 * tests the CLI as a program calls cliRunsAsProcesses() first.
 */
export async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return cliInProcess && commandOf(args) !== 'agent' ? inThisProcess(args) : cliAs({}, ...args);
}

/** The command `args` run: the first word past the global options. `hangar agent` is a server: always a process. */
function commandOf(args: string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    if (['--node', '--token', '--home'].includes(args[i]!)) i++;
    else if (!args[i]!.startsWith('-')) return args[i];
  }
  return undefined;
}

let cliInProcess = true;

/** Every CLI run of this file is a process of its own, as a user's is: exit, streams, signals and all. */
export function cliRunsAsProcesses(): void {
  cliInProcess = false;
}

async function inThisProcess(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = { stdout: '', stderr: '' };
  let code = 0;
  const into = (stream: keyof typeof output) =>
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        output[stream] += chunk.toString();
        done();
      },
    });
  // A closed stdin, where a process would wait on the test's open pipe: tests that answer a question use withStdin.
  const io: CliIo = { stdout: into('stdout'), stderr: into('stderr'), stdin: Readable.from([]), setExitCode: (status) => (code = status) };
  await withCliIo(io, async () => {
    try {
      await runCommand(args);
    } catch (error) {
      code = failureStatus(error);
    }
  });
  return { code, ...output };
}

/** The CLI as `user` runs it, a process of its own: another `uid` and `gid` (as root, every file is readable), another environment or directory. */
export async function cliAs(user: { uid?: number; gid?: number; env?: NodeJS.ProcessEnv; cwd?: string }, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { ...user, maxBuffer: 256 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

export interface RunningCli {
  stderr(): string;
  interrupt(): void;
  /** `signal`: what killed it, when a signal did (then `code` is null). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string }>;
}

/** The CLI as a terminal runs it, with its stderr read as it comes. */
export function startCli(agent: Agent, ...args: string[]): RunningCli {
  const child = spawn(process.execPath, [CLI, '--node', agent.url, '--home', agent.home, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return {
    stderr: () => stderr,
    interrupt: () => child.kill('SIGINT'),
    exited: once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null, stdout })),
  };
}

/** The agent's views a test reads again and again while it waits. */
type Read = 'nodes' | 'desired' | 'rollouts' | 'jobs' | 'processes' | 'backends' | 'clusterStatus';

/**
 * One of this node's views, read over the agent's socket and token from this process, as the CLI reads it: for what a
 * test reads at every look while it waits, where a CLI run would start a node each time (about 0.2 s of CPU).
 */
export async function read<M extends Read>(agent: Agent, view: M): Promise<Awaited<ReturnType<WireClient[M]>>> {
  const client = await connect({ node: agent.url, home: agent.home });
  try {
    return (await (client[view] as (req: { node: string }) => Promise<unknown>)({ node: LOCAL_NODE })) as Awaited<ReturnType<WireClient[M]>>;
  } finally {
    client.close();
  }
}

export async function json<T>(agent: Agent, ...args: string[]): Promise<T> {
  const result = await hangar(agent, ...args, '--json');
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as T;
}

/** How many files (sockets included) process `pid` holds open. */
export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** The command lines of a process's children. */
export function childCommands(pid: number): string[] {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  return children.flatMap((child) => {
    try {
      return [readFileSync(`/proc/${child}/cmdline`, 'utf8').replaceAll('\0', ' ')];
    } catch {
      return []; // ended since the listing
    }
  });
}

/** What a process holds open, counted by kind ("socket" × 12, "anon_inode:[eventpoll]" × 1…): for a failure's message. */
export function describeFds(pid: number): string {
  const kinds = new Map<string, number>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`).replace(/:\[\d+\]$/, '');
    } catch {
      continue; // closed since the listing
    }
    kinds.set(target, (kinds.get(target) ?? 0) + 1);
  }
  return [...kinds].map(([kind, count]) => `${kind} × ${count}`).join(', ');
}
