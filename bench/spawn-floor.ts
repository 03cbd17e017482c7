// The floor several figures are measured against: a backend spawned by hand, to its first Health answer.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { BackendClient } from '../electron/core/supervisor/grpc-client.ts';
import { portAnswers } from '../electron/core/supervisor/readiness.ts';
import { freePort } from '../electron/core/supervisor/test-helpers.ts';

export interface FloorOptions {
  /** The environment the benches' hosts give a backend: theirs, with their Node runtime named. */
  env?: NodeJS.ProcessEnv;
  /**
   * Found by the bench's own probe instead: the port tried every `pollEveryMs`, then Health, as a bench that measures
   * Hangar from outside finds its backend (the probe's work then weighs on both sides alike).
   */
  pollEveryMs?: number;
  /** Timed through its stop too: SIGTERM to its group once Health answered, until it has exited. */
  andStop?: boolean;
}

/** The floor: spawn run.sh by hand, wait for the line saying it listens (no polling), then one Health call. */
export async function bareSpawnToHealth(dir: string, options: FloorOptions = {}): Promise<number> {
  const { env = { ...process.env, HANGAR_NODE: process.execPath }, pollEveryMs, andStop = false } = options;
  const port = await freePort();
  const start = performance.now();
  const child = spawn(join(dir, 'run.sh'), ['--addr', `127.0.0.1:${port}`], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  const client = new BackendClient(`127.0.0.1:${port}`);
  if (pollEveryMs === undefined) {
    for await (const line of createInterface({ input: child.stderr! })) if (line.includes('listening')) break;
    const health = await client.health(5000);
    if (health !== 'OK') throw new Error(`floor backend answered Health ${health}`);
  } else {
    child.stderr!.resume();
    while (!((await portAnswers(port)) && (await client.health(200).catch(() => null)) === 'OK')) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`floor backend exited before Health OK (${child.exitCode ?? child.signalCode})`);
      await delay(pollEveryMs);
    }
  }
  client.close();
  const exited = once(child, 'exit');
  if (andStop) {
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
  }
  const elapsed = performance.now() - start;
  if (!andStop) process.kill(-child.pid!, 'SIGKILL');
  await exited;
  return elapsed;
}
