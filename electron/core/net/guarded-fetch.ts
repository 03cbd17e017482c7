// Every download Hangar makes (galleries, tarballs, registries) goes through this fetch: a server that never answers,
// stalls, or drips bytes too slowly to ever finish, fails on its own, and a failed request says why in words. A URL's
// user and password go as basic auth, and no error shows the password.
import { HangarError } from '../../../shared/errors.ts';
import { messageOf } from '../../../shared/error-text.ts';
import { hidePasswords } from '../../../shared/url-password.ts';
import { credentialed } from './url-credentials.ts';

export interface TransferLimits {
  /** How long a server may take to send its response headers. */
  headersMs: number;
  /** A body sending fewer than lowSpeedBytes in any lowSpeedWindowMs has stalled (curl's --speed-limit/--speed-time). */
  lowSpeedBytes: number;
  lowSpeedWindowMs: number;
  /**
   * A body averaging under minRateBytesPerSec over any minRateWindowMs is given up on: a server dripping just enough
   * to keep the stall rule quiet would otherwise never finish. A body done sooner than the window is never judged;
   * 0 turns the rule off.
   */
  minRateBytesPerSec: number;
  minRateWindowMs: number;
}

export const DEFAULT_TRANSFER: TransferLimits = {
  headersMs: 30_000,
  lowSpeedBytes: 1024,
  lowSpeedWindowMs: 30_000,
  minRateBytesPerSec: 8 * 1024,
  minRateWindowMs: 60_000,
};

/** How finely the sliding windows move: a tenth of the shorter one. */
const TICKS_PER_WINDOW = 10;

/** A download that failed: its message names the URL; `reason` is the why alone, for a caller that names the URL itself. */
export class DownloadError extends HangarError {
  constructor(
    url: string,
    readonly reason: string,
  ) {
    super('failed', `${hidePasswords(url)}: ${reason}`);
  }
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

function rateText(bytesPerSec: number): string {
  return bytesPerSec < 1024 ? `${Math.round(bytesPerSec)} B/s` : `${Number((bytesPerSec / 1024).toFixed(1))} KiB/s`;
}

function urlOf(input: Parameters<typeof fetch>[0]): string {
  return typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
}

const TLS_CODE = /^(ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/;

/** Where a URL connects to, `host:port`, the port said or implied by its scheme. */
function hostPort(url: string): string {
  if (!URL.canParse(url)) return url;
  const { hostname, port, protocol } = new URL(url);
  return `${hostname}:${port || (protocol === 'https:' ? 443 : 80)}`;
}

/**
 * Turns undici's bare "fetch failed" for `url` into the reason: nothing listening, a port fetch refuses, DNS, TLS, a
 * bad redirect, a dropped connection.
 */
export function fetchFailureReason(err: unknown, url: string): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code ?? '';
  const message = cause?.message ?? messageOf(err);
  if (code === 'ECONNREFUSED') return `nothing listens at ${hostPort(url)} (connection refused)`;
  // The Fetch standard's blocked ports (25 of SMTP, 6000 of X11, ...): fetch refuses them without connecting.
  if (message === 'bad port') return `fetch never connects to ${hostPort(url)}: the Fetch standard blocks that port`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `host not found (DNS: ${code})`;
  if (TLS_CODE.test(code)) return `TLS failed (${code}): ${message.split('\n')[0]!.slice(0, 200)}`;
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'the server closed the connection';
  if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') return 'connection timed out';
  if (/scheme/i.test(message)) return 'redirected to a URL that is not http(s), which is refused';
  return hidePasswords(message);
}

/** Byte counts per tick, kept long enough to sum the longest window. */
class SlidingBytes {
  private readonly ticks: number[];
  private current = 0;
  private closed = 0;

  constructor(
    readonly tickMs: number,
    longestMs: number,
  ) {
    this.ticks = new Array<number>(Math.ceil(longestMs / tickMs) + 1).fill(0);
  }

  add(bytes: number): void {
    this.ticks[this.current]! += bytes;
  }

  tick(): void {
    this.closed++;
    this.current = (this.current + 1) % this.ticks.length;
    this.ticks[this.current] = 0;
  }

  /** Bytes in the last `ms` (whole ticks), or null until that much time has gone by. */
  over(ms: number): number | null {
    const count = Math.max(1, Math.round(ms / this.tickMs));
    if (this.closed < count) return null;
    let sum = 0;
    for (let back = 1; back <= count; back++) sum += this.ticks[(this.current - back + this.ticks.length) % this.ticks.length]!;
    return sum;
  }
}

/** Why a body is too slow to go on with, by the limits' two rules, or null while it is fast enough. */
function slowness(window: SlidingBytes, limits: TransferLimits): string | null {
  const recent = window.over(limits.lowSpeedWindowMs);
  if (recent !== null && recent < limits.lowSpeedBytes) {
    return `stalled: less than ${limits.lowSpeedBytes} bytes in ${seconds(limits.lowSpeedWindowMs)}`;
  }
  const averaged = limits.minRateBytesPerSec > 0 ? window.over(limits.minRateWindowMs) : null;
  const rate = averaged === null ? Infinity : averaged / (limits.minRateWindowMs / 1000);
  if (rate < limits.minRateBytesPerSec) {
    return `too slow: ${rateText(rate)} averaged over the last ${seconds(limits.minRateWindowMs)}, under the ${rateText(limits.minRateBytesPerSec)} minimum`;
  }
  return null;
}

/** Counts bytes as they pass and calls onSlow when a sliding window shows too few of them. */
function speedWatch(limits: TransferLimits, onSlow: (why: string) => void): TransformStream<Uint8Array, Uint8Array> {
  const windows = [limits.lowSpeedWindowMs, ...(limits.minRateBytesPerSec > 0 ? [limits.minRateWindowMs] : [])];
  const bytes = new SlidingBytes(Math.min(...windows) / TICKS_PER_WINDOW, Math.max(...windows));
  let timer: NodeJS.Timeout | undefined;
  return new TransformStream({
    start() {
      timer = setInterval(() => {
        bytes.tick();
        const why = slowness(bytes, limits);
        if (why === null) return;
        clearInterval(timer);
        onSlow(why);
      }, bytes.tickMs).unref();
    },
    transform(chunk, controller) {
      bytes.add(chunk.byteLength);
      controller.enqueue(chunk);
    },
    flush() {
      clearInterval(timer);
    },
  });
}

/**
 * The body with its read errors named: a connection dropped mid-body is undici's bare "terminated", which a reader
 * would take for a damaged archive. An abort keeps its own reason (a stall, a deadline, the caller's).
 */
function withReasons(body: ReadableStream<Uint8Array>, url: string, signal: AbortSignal): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (err) {
          controller.error(signal.aborted ? signal.reason : new DownloadError(url, `the download broke off: ${fetchFailureReason(err, url)}`));
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

/**
 * What a status line's reason may hold by HTTP's grammar, which a Response built here must keep to: undici reads a
 * server's control characters into statusText, and a Response given them back throws a bare "Invalid statusText".
 */
const NOT_REASON = /[^\t\x20-\x7e\x80-\xff]/g;

/** The same response with its body read through `body`. */
function withBody(response: Response, body: ReadableStream<Uint8Array>): Response {
  const statusText = response.statusText.replace(NOT_REASON, '');
  const wrapped = new Response(body, { status: response.status, statusText, headers: response.headers });
  Object.defineProperties(wrapped, { url: { value: response.url }, redirected: { value: response.redirected } });
  return wrapped;
}

/** A request for a URL with user info: the URL without it, and basic auth among the headers unless one is given. */
function withUrlCredentials(input: Parameters<typeof fetch>[0], init: RequestInit): { input: Parameters<typeof fetch>[0]; headers: RequestInit['headers'] } {
  if (input instanceof Request) return { input, headers: init.headers };
  const { url, authorization } = credentialed(urlOf(input));
  if (authorization === null) return { input, headers: init.headers };
  const headers = new Headers(init.headers);
  if (!headers.has('authorization')) headers.set('authorization', authorization);
  return { input: url, headers };
}

/** `inner` with the limits: those not given are DEFAULT_TRANSFER's. */
export function guardedFetch(inner: typeof fetch, given: Partial<TransferLimits> = {}): typeof fetch {
  const limits: TransferLimits = { ...DEFAULT_TRANSFER, ...given };
  return async (given, init = {}) => {
    const url = urlOf(given);
    const { input, headers } = withUrlCredentials(given, init);
    const guard = new AbortController();
    const giveUp = (why: string) => guard.abort(new DownloadError(url, why));
    const signal = init.signal ? AbortSignal.any([init.signal, guard.signal]) : guard.signal;
    const headersTimer = setTimeout(() => giveUp(`no response within ${seconds(limits.headersMs)}`), limits.headersMs);
    let response: Response;
    try {
      response = await inner(input, { ...init, headers, signal });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw new DownloadError(url, fetchFailureReason(err, url));
    } finally {
      clearTimeout(headersTimer);
    }
    if (response.body === null) return response;
    return withBody(response, withReasons(response.body, url, signal).pipeThrough(speedWatch(limits, giveUp)));
  };
}
