// Every download Hangar makes (galleries, tarballs, registries) goes through this fetch: a server that never answers,
// or drips bytes too slowly to ever finish, fails on its own, and a failed request says why in words.
import { HangarError } from '../../../shared/errors.ts';

export interface TransferLimits {
  /** How long a server may take to send its response headers. */
  headersMs: number;
  /** A body slower than lowSpeedBytes per lowSpeedWindowMs is given up on (curl's --speed-limit/--speed-time). */
  lowSpeedBytes: number;
  lowSpeedWindowMs: number;
}

export const DEFAULT_TRANSFER: TransferLimits = { headersMs: 30_000, lowSpeedBytes: 1024, lowSpeedWindowMs: 30_000 };

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

function urlOf(input: Parameters<typeof fetch>[0]): string {
  return typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
}

const TLS_CODE = /^(ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/;

/** Turns undici's bare "fetch failed" into the reason: refused, DNS, TLS, a bad redirect, a dropped connection. */
function reasonOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code ?? '';
  const message = cause?.message ?? (err instanceof Error ? err.message : String(err));
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `host not found (DNS: ${code})`;
  if (TLS_CODE.test(code)) return `TLS failed (${code}): ${message.split('\n')[0]!.slice(0, 200)}`;
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'the server closed the connection';
  if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') return 'connection timed out';
  if (/scheme/i.test(message)) return 'redirected to a URL that is not http(s), which is refused';
  return message;
}

/** Counts bytes as they pass and calls onStall when a window goes by with too few of them. */
function lowSpeedWatch(limits: TransferLimits, onStall: () => void): TransformStream<Uint8Array, Uint8Array> {
  let bytes = 0;
  let timer: NodeJS.Timeout | undefined;
  return new TransformStream({
    start() {
      timer = setInterval(() => {
        if (bytes < limits.lowSpeedBytes) {
          clearInterval(timer);
          onStall();
        }
        bytes = 0;
      }, limits.lowSpeedWindowMs).unref();
    },
    transform(chunk, controller) {
      bytes += chunk.byteLength;
      controller.enqueue(chunk);
    },
    flush() {
      clearInterval(timer);
    },
  });
}

/** The same response with its body read through `body`. */
function withBody(response: Response, body: ReadableStream<Uint8Array>): Response {
  const wrapped = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  Object.defineProperties(wrapped, { url: { value: response.url }, redirected: { value: response.redirected } });
  return wrapped;
}

export function guardedFetch(inner: typeof fetch, limits: TransferLimits = DEFAULT_TRANSFER): typeof fetch {
  return async (input, init = {}) => {
    const url = urlOf(input);
    const guard = new AbortController();
    const giveUp = (why: string) => guard.abort(new HangarError('failed', `${url}: ${why}`));
    const signal = init.signal ? AbortSignal.any([init.signal, guard.signal]) : guard.signal;
    const headersTimer = setTimeout(() => giveUp(`no response within ${seconds(limits.headersMs)}`), limits.headersMs);
    let response: Response;
    try {
      response = await inner(input, { ...init, signal });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw new HangarError('failed', `${url}: ${reasonOf(err)}`);
    } finally {
      clearTimeout(headersTimer);
    }
    if (response.body === null) return response;
    const slow = `stalled: less than ${limits.lowSpeedBytes} bytes in ${seconds(limits.lowSpeedWindowMs)}`;
    return withBody(response, response.body.pipeThrough(lowSpeedWatch(limits, () => giveUp(slow))));
  };
}
