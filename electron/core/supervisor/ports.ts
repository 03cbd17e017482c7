// Loopback ports for backends: a bounded range, never a port someone is listening on, and a released port rests
// in quarantine before another model gets it (a client of the old model must not reach the new one).
// Every Hangar host on the machine allocates from the same range, so each port a host hands out is reserved
// machine-wide first (the name `hangar-port-<n>`, see machine-name.ts), held while its backend uses it and through
// its quarantine, and dropped by the OS if the host dies: two hosts never hand out the same port.
import { createServer, type Server } from 'node:net';
import { HangarError } from '../../../shared/index.ts';
import { holdName, nameAddress } from '../machine-name.ts';

export class PortPool {
  private readonly taken = new Set<number>();
  private readonly quarantinedUntil = new Map<number, number>();
  private readonly reservations = new Map<number, Server>();
  private cursor: number;

  constructor(
    private range: [number, number],
    private readonly quarantineMs: number,
  ) {
    this.cursor = range[0];
  }

  setRange(range: [number, number]): void {
    this.range = range;
    this.cursor = range[0];
  }

  /** A free port of the range that no other host has reserved, reserved until release() and its quarantine. */
  async allocate(): Promise<number> {
    const [low, high] = this.range;
    const size = high - low + 1;
    for (let tried = 0; tried < size; tried++) {
      const port = this.cursor;
      this.cursor = port === high ? low : port + 1;
      if (this.taken.has(port) || this.isQuarantined(port) || this.reservations.has(port)) continue;
      this.taken.add(port);
      if ((await this.reserve(port)) && (await portIsFree(port))) return port;
      this.taken.delete(port);
      this.unreserve(port);
    }
    throw new HangarError('failed', `no free port in ${low}-${high} for a backend`);
  }

  /**
   * Takes back a port a model had (a client pinned to it keeps working): only while this host's own quarantine or a
   * fresh reservation holds it and nothing listens on it. Another host's starting backend has reserved its port
   * long before it listens (a build that waits before it binds): that port is never taken from under it.
   */
  async reclaim(port: number): Promise<boolean> {
    if (this.taken.has(port)) return false;
    const held = this.reservations.has(port);
    this.taken.add(port);
    if ((held || (await this.reserve(port))) && (await portIsFree(port))) return true;
    this.taken.delete(port);
    if (!held) this.unreserve(port);
    return false;
  }

  /** Marks a port as taken without probing it (an adopted backend already listens on it), and reserves it. */
  claim(port: number): void {
    this.taken.add(port);
    void this.reserve(port);
  }

  isTaken(port: number): boolean {
    return this.taken.has(port);
  }

  release(port: number): void {
    if (!this.taken.delete(port)) return;
    if (this.quarantineMs <= 0) return this.unreserve(port);
    this.quarantinedUntil.set(port, Date.now() + this.quarantineMs);
    setTimeout(() => {
      if (!this.taken.has(port)) this.unreserve(port);
    }, this.quarantineMs).unref();
  }

  isQuarantined(port: number): boolean {
    const until = this.quarantinedUntil.get(port);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.quarantinedUntil.delete(port);
    return false;
  }

  /** Gives every reservation back (the host is closing). */
  close(): void {
    for (const port of [...this.reservations.keys()]) this.unreserve(port);
  }

  private async reserve(port: number): Promise<boolean> {
    const server = await holdName(nameAddress(`hangar-port-${port}`)).catch(() => null);
    if (server) this.reservations.set(port, server);
    return server !== null;
  }

  private unreserve(port: number): void {
    this.reservations.get(port)?.close();
    this.reservations.delete(port);
  }
}

/** True when nothing holds the loopback port (a bind succeeds). */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
