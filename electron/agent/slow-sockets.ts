// A slowloris peer (tests and benchmarks only): many connections that each send part of a request and then wait.
import { connect, type Socket } from 'node:net';

export interface SlowSockets {
  /** How many the agent has not closed yet. */
  open(): number;
  /** Resolves once every socket has connected, or been refused or closed. */
  settled: Promise<void>;
  /** Resolves once the agent has closed every one of them. */
  allClosed: Promise<void>;
  destroy(): void;
}

/** `from`: the local addresses they come from, in turn (any of 127.0.0.0/8 reaches a loopback agent). */
export function openSlowSockets(url: string, count: number, from: string[] = ['127.0.0.1']): SlowSockets {
  const { hostname, port } = new URL(url);
  const sockets = new Set<Socket>();
  let pending = count;
  let open = 0;
  let settle!: () => void;
  let allGone!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const allClosed = new Promise<void>((resolve) => (allGone = resolve));
  const arrived = () => --pending === 0 && settle();
  for (let i = 0; i < count; i++) {
    const socket = connect({ port: Number(port), host: hostname, localAddress: from[i % from.length] });
    let connected = false;
    sockets.add(socket);
    socket.once('connect', () => {
      connected = true;
      open++;
      arrived();
      socket.write(`GET / HTTP/1.1\r\nHost: ${hostname}:${port}\r\n`);
    });
    socket.on('error', () => undefined);
    socket.once('close', () => {
      if (connected) open--;
      else arrived();
      sockets.delete(socket);
      if (sockets.size === 0) allGone();
    });
    // What the agent answers (a 408) is read, so that its closing the socket is seen.
    socket.resume();
  }
  return {
    open: () => open,
    settled,
    allClosed,
    destroy: () => sockets.forEach((socket) => socket.destroy()),
  };
}
