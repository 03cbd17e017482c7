// The floor several figures are measured against: a backend spawned by hand, to its first Health answer.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { BackendClient } from '../electron/core/supervisor/grpc-client.ts';
import { freePort } from '../electron/core/supervisor/test-helpers.ts';

/**
 * The floor: spawn run.sh by hand, wait for the line saying it listens (no polling), then one Health call. The
 * environment is the one the benches' hosts give a backend: theirs, with their Node runtime named.
 */
export async function bareSpawnToHealth(dir: string, env: NodeJS.ProcessEnv = { ...process.env, HANGAR_NODE: process.execPath }): Promise<number> {
  const port = await freePort();
  const start = performance.now();
  const child = spawn(join(dir, 'run.sh'), ['--addr', `127.0.0.1:${port}`], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  for await (const line of createInterface({ input: child.stderr! })) if (line.includes('listening')) break;
  const client = new BackendClient(`127.0.0.1:${port}`);
  const health = await client.health(5000);
  const elapsed = performance.now() - start;
  client.close();
  if (health !== 'OK') throw new Error(`floor backend answered Health ${health}`);
  process.kill(-child.pid!, 'SIGKILL');
  await once(child, 'exit');
  return elapsed;
}
