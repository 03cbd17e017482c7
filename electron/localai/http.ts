// LocalAI's HTTP API as Hangar calls it, a frontend's or a single server's: the API key as LocalAI reads it
// (`Authorization: Bearer KEY`, never in a message), JSON bodies with their content type (LocalAI answers 415
// without one), answers read up to a cap within one deadline that holds until the last byte, and errors said in one
// line.
export class LocalAiHttpError extends Error {}

/** No exchange could be had at all (nothing listens, the connection failed, the key is refused): not the answer's fault. */
export class LocalAiUnreachable extends LocalAiHttpError {}

const RESPONSE_MAX_BYTES = 8 * 1024 * 1024;

export interface LocalAiRequest {
  method?: 'GET' | 'POST';
  /** From the root, e.g. `/system`. */
  path: string;
  /** Sent as JSON. */
  body?: unknown;
  /** For the whole exchange, headers and body. */
  timeoutMs: number;
  /** The wait a missed deadline is said in, when this exchange ends a longer one (a load retried after its cooldown). */
  saidTimeoutMs?: number;
  /** Ends the request at once (a cancelled job). */
  signal?: AbortSignal;
  /** The most of a body read (default 8 MiB). */
  maxBytes?: number;
}

/** A LocalAI address, checked: http(s), no credentials in it. `what` names it in messages ("LocalAI frontend"). */
export function parseLocalAiUrl(text: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new LocalAiHttpError(`a ${what} address looks like http://HOST:8080, got "${text.slice(0, 200)}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new LocalAiHttpError(`a ${what} address is http:// or https://, got "${text.slice(0, 200)}"`);
  if (url.username || url.password) throw new LocalAiHttpError('put the LocalAI API key in its file, not in the address');
  return url;
}

/**
 * Why an API key cannot be sent, or null: a header value is one line of visible characters (a key file's second line,
 * or a key pasted with a line break, would otherwise reach fetch's header check, whose error quotes the header).
 */
export function apiKeyProblem(key: string): string | null {
  if (key.length > 4096) return 'the LocalAI API key is longer than 4096 characters';
  return /[^\x21-\x7e]/.test(key) ? 'the LocalAI API key holds a space, a line break or a character outside ASCII: give the key alone, on one line' : null;
}

/** Sends one request; rejects only when no whole answer came (`who` says whom, "the LocalAI frontend at URL"). */
export async function requestLocalAi(base: string, apiKey: string | null, request: LocalAiRequest, who: string): Promise<{ status: number; body: string }> {
  const url = new URL(request.path.slice(1), `${base}/`);
  if (apiKey && apiKeyProblem(apiKey)) throw new LocalAiHttpError(apiKeyProblem(apiKey)!);
  // A timer of its own, cleared when the body is read: AbortSignal.timeout's can be collected while the body streams.
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DeadlineError()), request.timeoutMs);
  const signal = request.signal ? AbortSignal.any([deadline.signal, request.signal]) : deadline.signal;
  const failed = (error: unknown) => new LocalAiHttpError(`${who}: ${describeFailure(error, request, apiKey)}`);
  try {
    let response: Response;
    try {
      response = await fetch(url, {
        method: request.method ?? 'GET',
        headers: {
          accept: 'application/json',
          ...(request.body !== undefined && { 'content-type': 'application/json' }),
          ...(apiKey && { authorization: `Bearer ${apiKey}` }),
        },
        ...(request.body !== undefined && { body: JSON.stringify(request.body) }),
        redirect: 'error',
        signal,
      });
    } catch (error) {
      const reason = signal.reason ?? error;
      const message = `cannot reach ${who}: ${describeFailure(reason, request, apiKey)}`;
      throw reason instanceof DeadlineError || signal.aborted ? new LocalAiHttpError(message) : new LocalAiUnreachable(message);
    }
    try {
      return { status: response.status, body: await readCapped(response, signal, request.maxBytes ?? RESPONSE_MAX_BYTES, who) };
    } catch (error) {
      if (error instanceof LocalAiHttpError) throw error;
      throw failed(signal.reason ?? error);
    }
  } finally {
    clearTimeout(timer);
  }
}

/** The body as JSON, or an error saying `who` answered `path` with something else. */
export function parseJson(body: string, who: string, path: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    throw new LocalAiHttpError(`${who} answered ${path} with something that is not JSON`);
  }
}

async function readCapped(response: Response, signal: AbortSignal, maxBytes: number, who: string): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  // fetch's own abort ends a read, but only once the next chunk is asked for: the signal cancels the reader at once.
  const cancel = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const { done, value } = await reader.read();
      if (signal.aborted) throw signal.reason;
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        throw new LocalAiHttpError(`${who} sent more than ${maxBytes / 1024 / 1024} MiB`);
      }
      chunks.push(value);
    }
  } finally {
    signal.removeEventListener('abort', cancel);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** LocalAI's error bodies: `{"error":{"message":…}}`, `{"error":"…"}` or `{"message":…}` (its load endpoint). */
export function errorText(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: unknown; message?: unknown };
    const error = parsed.error;
    if (typeof error === 'string') return error.slice(0, 200);
    if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') return (error as { message: string }).message.slice(0, 200);
    if (typeof parsed.message === 'string') return parsed.message.slice(0, 200);
  } catch {
    // not JSON: said below as it is
  }
  return body.replace(/\s+/g, ' ').slice(0, 200) || 'no body';
}

class DeadlineError extends Error {
  override name = 'DeadlineError';
}

/** Why no whole answer came, in words that never hold the key (fetch's own errors may quote a header). */
function describeFailure(error: unknown, request: LocalAiRequest, apiKey: string | null): string {
  if (error instanceof DeadlineError) return `no whole answer to ${request.path.split('?')[0]} within ${(request.saidTimeoutMs ?? request.timeoutMs) / 1000} s`;
  if (request.signal?.aborted && error === request.signal.reason) return 'cancelled';
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code === 'ECONNREFUSED') return 'connection refused';
  if (cause?.code === 'ECONNRESET' || cause?.code === 'UND_ERR_SOCKET') return 'the connection was closed';
  const message = String(cause?.message ?? (error as Error)?.message ?? error).replace(/Bearer\s*\S*/gi, 'Bearer [API key]');
  return (apiKey ? message.split(apiKey).join('[API key]') : message).slice(0, 300);
}
