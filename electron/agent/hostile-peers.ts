// Hostile peers, by hand (tests and benchmarks only): raw WebSocket frames and upgrades, and slowloris floods.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { WS_PATH } from '../../shared/wire.ts';

/** A client frame: FIN + opcode, masked unless told otherwise, with a real or a lying length. */
export function frame(opcode: number, payload: Buffer, options: { rsv?: number; masked?: boolean; declaredLength?: bigint } = {}): Buffer {
  const masked = options.masked ?? true;
  const length = options.declaredLength ?? BigInt(payload.length);
  const head = [0x80 | (options.rsv ?? 0) | opcode];
  const maskBit = masked ? 0x80 : 0;
  let lengthBytes: Buffer;
  if (length < 126n) lengthBytes = Buffer.from([maskBit | Number(length)]);
  else if (length < 65536n) lengthBytes = Buffer.from([maskBit | 126, Number(length >> 8n), Number(length & 0xffn)]);
  else {
    lengthBytes = Buffer.alloc(9);
    lengthBytes[0] = maskBit | 127;
    lengthBytes.writeBigUInt64BE(length, 1);
  }
  if (!masked) return Buffer.concat([Buffer.from(head), lengthBytes, payload]);
  const key = randomBytes(4);
  const body = Buffer.from(payload.map((byte, i) => byte ^ key[i % 4]!));
  return Buffer.concat([Buffer.from(head), lengthBytes, key, body]);
}

/** A WebSocket upgrade request as a client writes it, offering no compression. */
export function upgradeRequest(host: string, protocols: string, path = WS_PATH): string {
  return (
    `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ${protocols}\r\n\r\n`
  );
}

/** A raw connection to the agent that has sent `head`; it reads nothing until told to. */
export async function rawSocket(url: string, head: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  socket.write(head);
  return socket;
}

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
