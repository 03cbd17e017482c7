// A port is chosen before its backend starts, and the backend binds it itself once it is ready to serve: a build
// that waits (a download, a compile) before it listens can find its port taken by then. It dies while starting,
// and is started again on another port, at most PORT_ATTEMPTS times; each move is told (the job, the model's log),
// with how long the lost start ran, since a build that waits a minute before it listens loses that minute each time.
import { setTimeout as delay } from 'node:timers/promises';
import type { HangarError } from '../../../shared/index.ts';
import { humanDuration } from '../../../shared/progress.ts';
import { portIsFree } from './ports.ts';
import type { Spawned } from './spawn.ts';

const PORT_ATTEMPTS = 3;
const DRAIN_LIMIT_MS = 500;
const PORT_IN_USE = /address already in use|EADDRINUSE|bind\(\) failed|Failed to add port|port .* (is )?(already )?in use/i;

/** A start that lost its port, as told: `text` for the job and the log. */
export interface PortMove {
  backend: string;
  /** null for a smoke start (no model). */
  model: string | null;
  port: number;
  text: string;
}

/** A startup death whose port someone else holds now: worth another try on another port. */
export class PortTaken extends Error {
  constructor(
    readonly error: HangarError,
    readonly port: number,
    /** How long the start had run when it died. */
    readonly afterMs: number,
  ) {
    super(error.message);
  }
}

/**
 * Runs `start` again, on another port, while it fails with PortTaken (at most PORT_ATTEMPTS times in all); `moved`
 * hears of each try given up, before the next begins.
 */
export async function retryOnPortClash<T>(start: (attempt: number) => Promise<T>, moved: (taken: PortTaken, attempt: number) => void): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(attempt);
    } catch (err) {
      if (!(err instanceof PortTaken) || attempt === PORT_ATTEMPTS) throw err instanceof PortTaken ? err.error : err;
      moved(err, attempt);
    }
  }
}

/** "port 30105 was taken while backend slow started: it died 1m 30s into its start; starting it again on another port (try 2 of 3)". */
export function portMoveText(backend: string, taken: PortTaken, attempt: number): string {
  const after = taken.afterMs < 60_000 ? `${(taken.afterMs / 1000).toFixed(1)}s` : humanDuration(taken.afterMs);
  return `port ${taken.port} was taken while backend ${backend} started: it died ${after} into its start; starting it again on another port (try ${attempt + 1} of ${PORT_ATTEMPTS})`;
}

/**
 * The error for a process that exited before it answered Health, made by `describe` once its last lines are in;
 * PortTaken when its port was taken (for retryOnPortClash). `startedAt`: when the start began (ms).
 */
export async function deathWhileStarting(
  spawned: Spawned,
  port: number,
  startedAt: number,
  stderr: () => string[],
  describe: (exit: { code: number | null; signal: string | null }) => HangarError,
): Promise<Error> {
  // The last lines may still be in the pipe; a child that inherited it must not hold the error back long.
  await Promise.race([spawned.drained, delay(DRAIN_LIMIT_MS)]);
  const error = describe(await spawned.exit);
  // A clash may be over by the time it is checked: what the backend said decides as well as the port now.
  const taken = stderr().some((line) => PORT_IN_USE.test(line)) || !(await portIsFree(port));
  return taken ? new PortTaken(error, port, Date.now() - startedAt) : error;
}
