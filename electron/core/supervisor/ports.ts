// Loopback ports for backends: a bounded range, never a port someone is listening on, and a released port rests
// in quarantine before another model gets it (a client of the old model must not reach the new one).
import { createServer } from 'node:net';
import { HangarError } from '../../../shared/index.ts';

export class PortPool {
  private readonly taken = new Set<number>();
  private readonly quarantinedUntil = new Map<number, number>();
  private cursor: number;

  constructor(
    private readonly range: [number, number],
    private readonly quarantineMs: number,
  ) {
    this.cursor = range[0];
  }

  /** A free port of the range, reserved until release(). */
  async allocate(): Promise<number> {
    const [low, high] = this.range;
    const size = high - low + 1;
    for (let tried = 0; tried < size; tried++) {
      const port = this.cursor;
      this.cursor = port === high ? low : port + 1;
      if (this.taken.has(port) || this.isQuarantined(port)) continue;
      this.taken.add(port);
      if (await portIsFree(port)) return port;
      this.taken.delete(port);
    }
    throw new HangarError('failed', `no free port in ${low}-${high} for a backend`);
  }

  /** Marks a port as taken without probing it (an adopted backend already listens on it). */
  claim(port: number): void {
    this.taken.add(port);
  }

  isTaken(port: number): boolean {
    return this.taken.has(port);
  }

  release(port: number): void {
    if (!this.taken.delete(port)) return;
    this.quarantinedUntil.set(port, Date.now() + this.quarantineMs);
  }

  isQuarantined(port: number): boolean {
    const until = this.quarantinedUntil.get(port);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.quarantinedUntil.delete(port);
    return false;
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
