// Every TCP connection the agent holds, and a cap on those that have not yet presented the token. Unauthenticated
// connections cost the agent a file descriptor each and anyone who can reach the port can open them, so at most
// `total` are held, and at most `perAddress` from one remote address. A new connection past a cap pushes out the
// oldest unauthenticated one (of its own address, or of the address that holds the most), rather than being
// refused: slow or idle sockets go first, and a client that sends its token at once always gets in.
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';

export interface PreAuthLimits {
  total: number;
  perAddress: number;
}

/**
 * 256 unauthenticated connections, 64 from one address; with a low open-file limit, a quarter of it, so that the
 * rest stays free for token holders, backends, logs and the install pipeline.
 */
export function preAuthLimits(): PreAuthLimits {
  const total = Math.max(8, Math.min(256, Math.floor(openFileLimit() / 4)));
  return { total, perAddress: Math.max(4, Math.floor(total / 4)) };
}

/** The soft RLIMIT_NOFILE; Infinity where /proc does not tell it. */
function openFileLimit(): number {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return line ? Number(line[1]) : Infinity;
  } catch {
    return Infinity;
  }
}

export class ConnectionGuard {
  private readonly sockets = new Set<Socket>();
  /** Unauthenticated connections by remote address, oldest first. */
  private readonly waiting = new Map<string, Set<Socket>>();
  /** Their addresses (a socket forgets its own once closed). */
  private readonly addressOf = new Map<Socket, string>();
  private closing = false;

  constructor(private readonly limits: PreAuthLimits) {}

  /** Takes a new connection in as unauthenticated, making room under the caps. */
  admit(socket: Socket): void {
    const address = socket.remoteAddress;
    if (this.closing || address === undefined) {
      socket.destroy();
      return;
    }
    this.sockets.add(socket);
    socket.once('close', () => {
      this.sockets.delete(socket);
      this.forget(socket);
    });
    const same = this.waiting.get(address);
    if (same && same.size >= this.limits.perAddress) this.shed(same);
    else if (this.addressOf.size >= this.limits.total) this.shed(this.busiestAddress());
    const own = this.waiting.get(address) ?? new Set<Socket>();
    this.waiting.set(address, own);
    own.add(socket);
    this.addressOf.set(socket, address);
  }

  /** The connection presented the token: it no longer counts against the caps. */
  authenticated(socket: Socket): void {
    this.forget(socket);
  }

  /** Destroys every connection, whatever its state (keep-alive, WebSocket, a half-done or refused upgrade). */
  destroyAll(): void {
    this.closing = true;
    for (const socket of this.sockets) socket.destroy();
  }

  private forget(socket: Socket): void {
    const address = this.addressOf.get(socket);
    if (address === undefined) return;
    this.addressOf.delete(socket);
    const own = this.waiting.get(address)!;
    own.delete(socket);
    if (own.size === 0) this.waiting.delete(address);
  }

  private shed(from: Set<Socket>): void {
    const oldest = from.values().next().value;
    if (!oldest) return;
    this.forget(oldest);
    oldest.destroy();
  }

  private busiestAddress(): Set<Socket> {
    let busiest = new Set<Socket>();
    for (const own of this.waiting.values()) if (own.size > busiest.size) busiest = own;
    return busiest;
  }
}
