// A respawned model prefers the port it had, so a client pinned to that port keeps working.
import { portIsFree, type PortPool } from './ports.ts';

/** Reserves `port` in the pool again when no other model holds it and nothing listens on it. */
export async function reclaimPort(pool: PortPool, port: number): Promise<boolean> {
  if (pool.isTaken(port) || !(await portIsFree(port))) return false;
  pool.claim(port);
  return true;
}
