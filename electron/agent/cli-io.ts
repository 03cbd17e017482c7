// Where a `hangar` command writes, what it reads, and how it sets its exit status: the process's own streams when the
// CLI runs as a program, or the streams a caller gave it (withCliIo) when a command runs inside another program, as
// the tests run most of theirs, several at a time, in the test's own process.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface CliIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stdin: NodeJS.ReadableStream;
  /** How the command ends when it does not fail outright, as `process.exitCode` says it. */
  setExitCode(code: number): void;
}

// Getters: touching process.stdin opens it, which a command that never reads it must not do.
const processIo: CliIo = {
  get stdout() {
    return process.stdout;
  },
  get stderr() {
    return process.stderr;
  },
  get stdin() {
    return process.stdin;
  },
  setExitCode(code) {
    process.exitCode = code;
  },
};

const given = new AsyncLocalStorage<CliIo>();
let running = 0;

export function cliIo(): CliIo {
  return given.getStore() ?? processIo;
}

/**
 * Runs `run` with `io` as its streams. On Node 20 an AsyncLocalStorage in use makes every promise of the process pay
 * (300,000 awaits took 110 against 39 ms of CPU), so it is switched off again once no command runs.
 */
export async function withCliIo<T>(io: CliIo, run: () => Promise<T>): Promise<T> {
  running++;
  try {
    return await given.run(io, run);
  } finally {
    if (--running === 0) given.disable();
  }
}
