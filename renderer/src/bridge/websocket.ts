import type { HangarBridge, NodeApi, NodeMethod, NodeRequest, NodeResponse } from '../../../shared/api.ts';
import { HangarError, isErrorEnvelope } from '../../../shared/errors.ts';
import { nodeMethods } from '../../../shared/schemas.ts';
import type { NodeEvent } from '../../../shared/types.ts';
import { WS_PROTOCOL, tokenProtocol } from '../../../shared/wire.ts';
import type { WireMessage, WireRequest } from '../../../shared/wire.ts';
import type { ConnectionStatus, Transport } from './transport.ts';

/** The close code the agent uses for a missing or wrong token. */
export const UNAUTHORIZED_CLOSE = 4401;

export interface WebSocketTransportOptions {
  url: string;
  token: string | null;
  /** The browser's WebSocket by default; tests pass another implementation of the same interface. */
  WebSocketImpl?: typeof WebSocket;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  /** Unsent requests wait for the next open socket; sent ones are lost with their socket. */
  wire: string | null;
}

/** A bridge over the agent's WebSocket: reconnects with backoff, queues calls while down, and never polls. */
export function createWebSocketTransport(options: WebSocketTransportOptions): Transport {
  const Impl = options.WebSocketImpl ?? WebSocket;
  const initialBackoff = options.initialBackoffMs ?? 250;
  const maxBackoff = options.maxBackoffMs ?? 5000;

  let token = options.token;
  let socket: WebSocket | null = null;
  let status: ConnectionStatus = 'connecting';
  let attempt = 0;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  let nextId = 1;
  const pending = new Map<number, Pending>();
  const eventListeners = new Set<(event: NodeEvent) => void>();
  const statusListeners = new Set<(status: ConnectionStatus) => void>();

  function setStatus(next: ConnectionStatus) {
    if (next === status) return;
    status = next;
    for (const listener of statusListeners) listener(next);
  }

  function connect() {
    if (closed) return;
    if (!token) {
      setStatus('unauthorized');
      return;
    }
    const ws = new Impl(options.url, [WS_PROTOCOL, tokenProtocol(token)]);
    socket = ws;
    ws.addEventListener('open', () => {
      if (socket !== ws) return;
      attempt = 0;
      setStatus('open');
      for (const request of pending.values()) {
        if (request.wire !== null) {
          ws.send(request.wire);
          request.wire = null;
        }
      }
    });
    ws.addEventListener('message', (message) => {
      if (socket === ws && typeof message.data === 'string') receive(message.data);
    });
    ws.addEventListener('close', (event) => {
      if (socket !== ws) return;
      socket = null;
      failInFlight('the connection to the agent was lost');
      if (closed) return;
      if (event.code === UNAUTHORIZED_CLOSE) {
        setStatus('unauthorized');
        return;
      }
      setStatus(status === 'connecting' ? 'connecting' : 'reconnecting');
      const delay = Math.min(maxBackoff, initialBackoff * 2 ** attempt++);
      retryTimer = setTimeout(connect, delay * (0.75 + Math.random() * 0.5));
    });
  }

  function receive(data: string) {
    let message: WireMessage;
    try {
      message = JSON.parse(data) as WireMessage;
    } catch {
      return;
    }
    if ('event' in message) {
      for (const listener of eventListeners) listener(message.event);
      return;
    }
    const request = pending.get(message.id);
    if (!request) return;
    pending.delete(message.id);
    if ('error' in message) {
      const envelope = isErrorEnvelope(message.error) ? message.error : { code: 'failed' as const, message: 'the agent sent a malformed error' };
      request.reject(new HangarError(envelope.code, envelope.message));
    } else {
      request.resolve(message.result);
    }
  }

  function failInFlight(reason: string) {
    for (const [id, request] of pending) {
      if (request.wire !== null) continue;
      pending.delete(id);
      request.reject(new HangarError('failed', reason));
    }
  }

  function call<M extends NodeMethod>(method: M, params: NodeRequest<M>): Promise<NodeResponse<M>> {
    if (closed) return Promise.reject(new HangarError('failed', 'the connection to the agent is closed'));
    const id = nextId++;
    const wire = JSON.stringify({ id, method, params } satisfies WireRequest);
    return new Promise((resolve, reject) => {
      const request: Pending = { resolve: resolve as (value: unknown) => void, reject, wire };
      pending.set(id, request);
      if (socket && status === 'open') {
        socket.send(wire);
        request.wire = null;
      }
    });
  }

  const api = Object.fromEntries(
    nodeMethods.map((method) => [method, (params: NodeRequest<typeof method>) => call(method, params)]),
  ) as unknown as NodeApi;

  const bridge: HangarBridge = {
    ...api,
    onEvent(listener) {
      eventListeners.add(listener);
      return () => eventListeners.delete(listener);
    },
  };

  connect();

  return {
    bridge,
    status: () => status,
    onStatus(listener) {
      statusListeners.add(listener);
      return () => statusListeners.delete(listener);
    },
    signIn(next) {
      token = next;
      attempt = 0;
      clearTimeout(retryTimer);
      const old = socket;
      socket = null;
      old?.close();
      failInFlight('the connection to the agent was replaced');
      setStatus('connecting');
      connect();
    },
    close() {
      closed = true;
      clearTimeout(retryTimer);
      socket?.close();
      socket = null;
      for (const request of pending.values()) request.reject(new HangarError('failed', 'the connection to the agent is closed'));
      pending.clear();
    },
  };
}
