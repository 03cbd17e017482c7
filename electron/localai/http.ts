// LocalAI's HTTP API as Hangar calls it, a frontend's or a single server's: the API key as LocalAI reads it
// (`Authorization: Bearer KEY`, never in a message), JSON bodies with their content type (LocalAI answers 415
// without one), answers read up to a cap, and errors said in one line.
export class LocalAiHttpError extends Error {}

const RESPONSE_MAX_BYTES = 8 * 1024 * 1024;

export interface LocalAiRequest {
  method?: 'GET' | 'POST';
  /** From the root, e.g. `/system`. */
  path: string;
  /** Sent as JSON. */
  body?: unknown;
  timeoutMs: number;
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

/** Sends one request; rejects only when no answer came (`who` says whom, "the LocalAI frontend at URL"). */
export async function requestLocalAi(base: string, apiKey: string | null, request: LocalAiRequest, who: string): Promise<{ status: number; body: string }> {
  const url = new URL(request.path.slice(1), `${base}/`);
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
      signal: AbortSignal.timeout(request.timeoutMs),
    });
  } catch (error) {
    throw new LocalAiHttpError(`cannot reach ${who}: ${describeFetchError(error, request.timeoutMs)}`);
  }
  return { status: response.status, body: await readCapped(response, who) };
}

/** The body as JSON, or an error saying `who` answered `path` with something else. */
export function parseJson(body: string, who: string, path: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    throw new LocalAiHttpError(`${who} answered ${path} with something that is not JSON`);
  }
}

async function readCapped(response: Response, who: string): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > RESPONSE_MAX_BYTES) {
      await reader.cancel();
      throw new LocalAiHttpError(`${who} sent more than ${RESPONSE_MAX_BYTES / 1024 / 1024} MiB`);
    }
    chunks.push(value);
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

function describeFetchError(error: unknown, timeoutMs: number): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code === 'ECONNREFUSED') return 'connection refused';
  if ((error as Error).name === 'TimeoutError') return `no answer within ${timeoutMs / 1000} s`;
  return cause?.message ?? (error as Error).message;
}
