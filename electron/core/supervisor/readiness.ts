// Readiness: a backend is ready when Health answers "OK". Until its port accepts a TCP connection there is no
// point in a gRPC call, so the port is probed at a short fixed interval (a refused connect costs microseconds), and
// at once whenever the backend writes a line (backends say when they listen); then Health is asked, with a backoff
// while the backend is still warming up.
import { connect } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { BackendClient } from './grpc-client.ts';

const PORT_PROBE_INTERVAL_MS = 5;
const HEALTH_FIRST_RETRY_MS = 10;
const HEALTH_MAX_RETRY_MS = 250;
const HEALTH_CALL_LIMIT_MS = 2000;

export class NotReadyError extends Error {
  constructor(readonly lastAnswer: string) {
    super(`no Health OK before the deadline (${lastAnswer})`);
  }
}

/** Wakes a wait for readiness early: the starting backend wrote a line. */
export class OutputNudge {
  #wake: (() => void) | null = null;

  nudge(): void {
    this.#wake?.();
  }

  /** Resolves after `ms`, or sooner on a nudge; rejects with the abort reason on `signal`. */
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', aborted);
        this.#wake = null;
      };
      const timer = setTimeout(() => (done(), resolve()), ms);
      const aborted = () => (done(), reject(signal.reason));
      if (signal.aborted) return aborted();
      signal.addEventListener('abort', aborted);
      this.#wake = () => (done(), resolve());
    });
  }
}

/** Resolves once Health says OK; rejects with NotReadyError at `deadline`, or with the abort reason on `signal`. */
export async function waitReady(port: number, client: BackendClient, deadline: number, signal: AbortSignal, output = new OutputNudge()): Promise<void> {
  while (!(await portAnswers(port))) {
    if (Date.now() >= deadline) throw new NotReadyError(`port ${port} never accepted a connection`);
    await output.sleep(PORT_PROBE_INTERVAL_MS, signal);
  }
  let retryMs = HEALTH_FIRST_RETRY_MS;
  for (;;) {
    signal.throwIfAborted();
    let answer: string;
    try {
      answer = await client.health(Math.max(1, Math.min(HEALTH_CALL_LIMIT_MS, deadline - Date.now())));
      if (answer === 'OK') return;
      answer = `Health answered ${JSON.stringify(answer)}`;
    } catch (err) {
      answer = (err as Error).message;
    }
    if (Date.now() >= deadline) throw new NotReadyError(answer);
    await delay(retryMs, undefined, { signal });
    retryMs = Math.min(retryMs * 2, HEALTH_MAX_RETRY_MS);
  }
}

export function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
