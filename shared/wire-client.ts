import { bridgeFrom, type HangarBridge } from './api.ts';
import { HangarError } from './errors.ts';
import type { NodeEvent } from './types.ts';
import { PING_METHOD, type WireMessage, type WireRequest } from './wire.ts';

/** The part of the WebSocket API shared by browsers and the `ws` package. */
export interface SocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (event: { code: number; reason: string }) => void): void;
}

export interface WireClient extends HangarBridge {
  /** Resolves when the socket closes, with its close code. */
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Resolves when the agent answers a ping. */
  ping(): Promise<void>;
  close(): void;
}

/** A HangarBridge over an open WebSocket speaking the agent's wire format. */
export function createWireClient(socket: SocketLike): WireClient {
  let nextId = 1;
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  const listeners = new Set<(event: NodeEvent) => void>();
  /** Why the connection closed: a call made after that fails with it at once, instead of waiting for ever. */
  let closedBy: HangarError | null = null;

  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.addEventListener('close', ({ code, reason }) => {
      const error = (closedBy = code === 4401 ? new HangarError('forbidden', 'the agent rejected the token') : new HangarError('failed', `connection to the agent closed (${code}${reason ? `: ${reason}` : ''})`));
      for (const call of pending.values()) call.reject(error);
      pending.clear();
      resolve({ code, reason });
    });
  });

  socket.addEventListener('message', ({ data }) => {
    const message = JSON.parse(String(data)) as WireMessage;
    if ('event' in message) {
      for (const listener of listeners) listener(message.event);
      return;
    }
    if (message.id === null) return;
    const call = pending.get(message.id);
    if (!call) return;
    pending.delete(message.id);
    if ('error' in message) call.reject(new HangarError(message.error.code, message.error.message));
    else call.resolve(message.result);
  });

  const call = (method: WireRequest['method'], params: unknown) =>
    new Promise<unknown>((resolve, reject) => {
      if (closedBy) return reject(closedBy);
      const id = nextId++;
      pending.set(id, { resolve, reject });
      socket.send(JSON.stringify({ id, method, params } satisfies WireRequest));
    });

  const bridge = bridgeFrom(call, (listener) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  });
  return {
    ...bridge,
    closed,
    ping: () => call(PING_METHOD, null).then(() => undefined),
    close: () => socket.close(1000, 'bye'),
  };
}
