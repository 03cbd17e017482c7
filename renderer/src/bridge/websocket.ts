import { bridgeFrom, type HangarBridge, type HangarMethod } from '../../../shared/api.ts';
import { HangarError } from '../../../shared/errors.ts';
import type { NodeEvent } from '../../../shared/types.ts';
import { createWireClient } from '../../../shared/wire-client.ts';
import type { SocketLike, WireClient } from '../../../shared/wire-client.ts';
import { WS_PROTOCOL, tokenProtocol } from '../../../shared/wire.ts';
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
  /** How often an open link is pinged, and how long a ping may go unanswered before the agent counts as not answering. */
  pingIntervalMs?: number;
  pingDeadlineMs?: number;
}

/**
 * Each ping has 3 s to be answered, room enough for a busy agent. A stopped one is seen at most interval + deadline
 * after it stopped: a ping every 1.5 s keeps that under 5 s.
 */
export const PING_INTERVAL_MS = 1500;
export const PING_DEADLINE_MS = 3000;

interface Queued {
  method: HangarMethod;
  params: unknown;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/**
 * A bridge over the agent's WebSocket that outlives any one socket: each open socket gets a wire client, calls made
 * before the first socket opens (or before sign-in) wait for it, and a lost link is retried with backoff. A call made
 * while a lost link is being retried, or while the agent does not answer its pings, fails at once: what the user
 * clicked then is dropped, never replayed later. State comes by events; the only timer is the ping, which tells a
 * stopped agent (its socket open, nothing answered) from a live one.
 */
export function createWebSocketTransport(options: WebSocketTransportOptions): Transport {
  const Impl = options.WebSocketImpl ?? WebSocket;
  const initialBackoff = options.initialBackoffMs ?? 250;
  const maxBackoff = options.maxBackoffMs ?? 5000;
  const pingInterval = options.pingIntervalMs ?? PING_INTERVAL_MS;
  const pingDeadline = options.pingDeadlineMs ?? PING_DEADLINE_MS;

  let token = options.token;
  let socket: WebSocket | null = null;
  let client: WireClient | null = null;
  let status: ConnectionStatus = 'connecting';
  let attempt = 0;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let stopPinging = () => {};
  let closed = false;
  const queue: Queued[] = [];
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
      client = createWireClient(ws as SocketLike);
      client.onEvent((event) => {
        for (const listener of eventListeners) listener(event);
      });
      setStatus('open');
      for (const call of queue.splice(0)) send(client, call);
      stopPinging = pingWhileOpen(client);
    });
    ws.addEventListener('close', (event) => {
      if (socket !== ws) return;
      stopPinging();
      socket = null;
      client = null;
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

  /** One ping every interval, each with its deadline: an answer after a missed deadline brings the link back. */
  function pingWhileOpen(to: WireClient): () => void {
    const deadlines = new Set<ReturnType<typeof setTimeout>>();
    const ping = () => {
      const deadline = setTimeout(() => {
        deadlines.delete(deadline);
        if (client === to && status === 'open') setStatus('unresponsive');
      }, pingDeadline);
      deadlines.add(deadline);
      to.ping().then(
        () => {
          clearTimeout(deadline);
          deadlines.delete(deadline);
          if (client === to && status === 'unresponsive') setStatus('open');
        },
        () => undefined, // the socket closed: its close handler says so
      );
    };
    const timer = setInterval(ping, pingInterval);
    return () => {
      clearInterval(timer);
      for (const deadline of deadlines) clearTimeout(deadline);
    };
  }

  function send(to: WireClient, call: Queued) {
    (to[call.method] as (params: unknown) => Promise<unknown>)(call.params).then(call.resolve, call.reject);
  }

  function call(method: HangarMethod, params: unknown): Promise<unknown> {
    if (closed) return Promise.reject(new HangarError('failed', 'the connection to the agent is closed'));
    if (status === 'reconnecting') return Promise.reject(new HangarError('failed', 'the agent cannot be reached; nothing was sent'));
    if (status === 'unresponsive') return Promise.reject(new HangarError('failed', 'the agent is not answering; nothing was sent'));
    return new Promise((resolve, reject) => {
      const queued = { method, params, resolve, reject };
      if (client && status === 'open') send(client, queued);
      else queue.push(queued);
    });
  }

  const bridge: HangarBridge = bridgeFrom(call, (listener) => {
    eventListeners.add(listener);
    return () => eventListeners.delete(listener);
  });

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
      stopPinging();
      const old = socket;
      socket = null;
      client = null;
      old?.close();
      setStatus('connecting');
      connect();
    },
    close() {
      closed = true;
      clearTimeout(retryTimer);
      stopPinging();
      socket?.close();
      socket = null;
      client = null;
      for (const queued of queue.splice(0)) queued.reject(new HangarError('failed', 'the connection to the agent is closed'));
    },
  };
}
