// The stand-in's HTTP layer, as LocalAI's Echo app serves it: routing with Echo's 404/405/OPTIONS answers, the legacy
// API-key middleware, Echo's DefaultBinder, the central error handler with LocalAI's error envelope and 404 page, and
// c.JSON's encoding.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { CooldownError } from './standin-loader.ts';

/** Routes the auth middleware lets through without a key (the implemented ones of LocalAI's public list). */
const PUBLIC = new Set(['GET /healthz', 'GET /readyz']);

export interface Incoming {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Go's ContentLength != 0: a declared non-zero length, or a chunked body. */
  hasBody: boolean;
  params: string[];
}

export interface Answer {
  status: number;
  /** JSON, written as Echo writes it; undefined: no body (c.NoContent). */
  body?: unknown;
  html?: string;
  headers?: Record<string, string>;
}

export interface Route {
  method: string;
  pattern: RegExp;
  handle: (request: Incoming) => Answer | Promise<Answer>;
}

/** An echo.HTTPError: its text reaches clients as `code=N, message=…`. */
export class HttpError extends Error {
  constructor(
    readonly code: number,
    text: string,
    internal?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(`code=${code}, message=${text}${internal === undefined ? '' : `, internal=${internal}`}`);
  }
}

/** A route; `:name` segments are its params, in order. */
export function route(method: string, path: string, handle: Route['handle']): Route {
  return { method, pattern: new RegExp(`^${path.replace(/:\w+/g, '([^/]+)')}$`), handle };
}

/** One request as Echo serves it: trailing slash removed, auth around routing, failures through the error handler. */
export async function serve(req: IncomingMessage, res: ServerResponse, routes: Route[], apiKeys: string[]): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  const length = req.headers['content-length'];
  const request: Incoming = {
    method: req.method ?? 'GET',
    // Echo's RemoveTrailingSlash runs before routing and auth.
    path: url.pathname.length > 1 && url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname,
    query: url.searchParams,
    headers: req.headers,
    body: Buffer.concat(chunks),
    hasBody: length === undefined ? req.headers['transfer-encoding'] !== undefined : Number(length) !== 0,
    params: [],
  };
  let answer: Answer;
  try {
    answer = authorize(request, apiKeys) ?? (await dispatch(request, routes));
  } catch (error) {
    answer = failure(request, error);
  }
  write(res, answer, url.searchParams.has('pretty'));
}

/** The auth middleware with legacy keys: it runs around routing, so an unknown path without a key is a 401 too. */
function authorize(request: Incoming, keys: string[]): Answer | null {
  if (keys.length === 0) return null;
  const key = extractKey(request.headers);
  if (key && keys.some((valid) => sameKey(key, valid))) return null;
  if (PUBLIC.has(`${request.method} ${request.path}`) || request.path.startsWith('/api/node/')) return null;
  return { status: 401, headers: { 'WWW-Authenticate': 'Bearer' }, body: { error: { code: 401, message: 'An authentication key is required', type: 'invalid_request_error' } } };
}

async function dispatch(request: Incoming, routes: Route[]): Promise<Answer> {
  const matching = routes.filter((route) => route.pattern.test(request.path));
  const route = matching.find((candidate) => candidate.method === request.method);
  if (!route) {
    if (matching.length === 0) throw new HttpError(404, 'Not Found');
    // Echo's router: OPTIONS first, then the path's methods in its fixed order (here only GET and POST occur).
    const allow = ['OPTIONS', ...['GET', 'POST'].filter((method) => matching.some((m) => m.method === method))].join(', ');
    if (request.method === 'OPTIONS') return { status: 204, headers: { Allow: allow } };
    throw new HttpError(405, 'Method Not Allowed', undefined, { Allow: allow });
  }
  request.params = (route.pattern.exec(request.path) ?? []).slice(1).map((param) => decodeURIComponent(param));
  return route.handle(request);
}

/** Echo's DefaultBinder for a body: nothing when there is none, JSON or a form by type, else 415. */
export function bind(request: Incoming): Record<string, unknown> {
  if (!request.hasBody) return {};
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim();
  if (type === 'application/json') return parseJson(request.body.toString('utf8'));
  if (type === 'application/x-www-form-urlencoded') return Object.fromEntries(new URLSearchParams(request.body.toString('utf8')));
  // Echo decodes these too; the stand-in accepts them and reads no field.
  if (type === 'multipart/form-data' || type === 'application/xml' || type === 'text/xml') return {};
  throw new HttpError(415, 'Unsupported Media Type');
}

function parseJson(textBody: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(textBody);
  } catch (error) {
    const reason = (error as Error).message;
    throw new HttpError(400, `Syntax error: ${reason}`, reason);
  }
  if (value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw typeError('object', value, '');
  return value as Record<string, unknown>;
}

export function text(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw typeError('string', value, field);
  return value;
}

/** A JSON bool, or a form value as strconv.ParseBool reads it. */
export function flag(body: Record<string, unknown>, field: string): boolean {
  const value = body[field];
  if (value === undefined || value === null) return false;
  if (typeof value === 'string') return ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value);
  if (typeof value !== 'boolean') throw typeError('bool', value, field);
  return value;
}

function typeError(expected: string, value: unknown, field: string): HttpError {
  const got = Array.isArray(value) ? 'array' : typeof value === 'boolean' ? 'bool' : typeof value;
  return new HttpError(400, `Unmarshal type error: expected=${expected}, got=${got}, field=${field}`);
}

/** The central error handler: HTTPError codes, 503 for a cooldown, 500 otherwise; every 404 becomes the not-found page. */
function failure(request: Incoming, error: unknown): Answer {
  const code = error instanceof HttpError ? error.code : error instanceof CooldownError ? 503 : 500;
  if (code === 404) return notFound(request);
  const headers = error instanceof HttpError ? error.headers : {};
  if (error instanceof CooldownError) headers['Retry-After'] = String(Math.max(1, Math.ceil(error.retryAfterMs / 1000)));
  return { status: code, headers, body: { error: { code, message: (error as Error).message, type: '' } } };
}

function notFound(request: Incoming): Answer {
  const wantsJson = (request.headers['content-type'] ?? '').includes('application/json') || !(request.headers.accept ?? '').includes('text/html');
  if (wantsJson) return { status: 404, body: { error: { code: 404, message: 'Resource not found', type: '' } } };
  return { status: 404, html: '<!DOCTYPE html>\n<html><head><title>LocalAI - 404</title></head><body><h1>Resource not found</h1></body></html>\n' };
}

/** As Echo writes c.JSON: Go's encoder (HTML-escaped), a trailing newline, indented under `?pretty`. */
function write(res: ServerResponse, answer: Answer, pretty: boolean): void {
  if (answer.html !== undefined) {
    res.writeHead(answer.status, { ...answer.headers, 'Content-Type': 'text/html; charset=UTF-8' });
    return void res.end(answer.html);
  }
  if (answer.body === undefined) {
    res.writeHead(answer.status, answer.headers);
    return void res.end();
  }
  const json = JSON.stringify(answer.body, null, pretty ? 2 : undefined).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  res.writeHead(answer.status, { ...answer.headers, 'Content-Type': 'application/json' });
  res.end(`${json}\n`);
}

/** extractKey: Authorization (a `Bearer ` prefix stripped, else the whole value), x-api-key, xi-api-key, the token cookie. */
function extractKey(headers: IncomingHttpHeaders): string {
  const auth = headers.authorization ?? '';
  if (auth.startsWith('Bearer ')) return auth.slice('Bearer '.length);
  if (auth) return auth;
  const header = (name: string) => (headers[name] as string | undefined) ?? '';
  if (header('x-api-key')) return header('x-api-key');
  if (header('xi-api-key')) return header('xi-api-key');
  const cookie = (headers.cookie ?? '').split(';').map((part) => part.trim()).find((part) => part.startsWith('token='));
  return cookie?.slice('token='.length) ?? '';
}

function sameKey(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
