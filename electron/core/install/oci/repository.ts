// HTTP access to one repository of a registry (distribution spec): authentication challenges (anonymous or
// credentialed bearer tokens, Basic), cached per repository, and redirects followed by hand so credentials
// never reach another host (blob storage).
import { HangarError } from '../../../../shared/errors.ts';
import type { CredentialLookup, Credentials } from './credentials.ts';
import { registryBaseUrl, type ImageReference } from './reference.ts';

export interface RepositoryOptions {
  fetch: typeof globalThis.fetch;
  credentials: CredentialLookup;
  authCache: AuthCache;
}

interface RegistryRequest {
  method?: 'GET' | 'HEAD';
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

const MAX_REDIRECTS = 10;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const DEFAULT_TOKEN_SECONDS = 60;
const EXPIRY_MARGIN_MS = 10_000;
const BASIC_TTL_MS = 10 * 60_000;

/** Authorization header values per registry repository, each until it expires. */
export class AuthCache {
  private readonly entries = new Map<string, { authorization: string; expiresAt: number }>();

  get(key: string): string | null {
    const entry = this.entries.get(key);
    if (!entry) return null;
    if (entry.expiresAt > Date.now()) return entry.authorization;
    this.entries.delete(key);
    return null;
  }

  set(key: string, authorization: string, ttlMs: number): void {
    this.entries.set(key, { authorization, expiresAt: Date.now() + ttlMs });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }
}

interface Challenge {
  scheme: string;
  params: Record<string, string>;
}

export class Repository {
  private readonly cacheKey: string;

  constructor(
    readonly ref: ImageReference,
    /** How errors name the image: the uri as the gallery wrote it. */
    readonly label: string,
    private readonly options: RepositoryOptions,
  ) {
    this.cacheKey = `${ref.registry}/${ref.repository}`;
  }

  /** Requests `/v2/<repository><path>`, answering one authentication challenge if the registry raises it. */
  async request(path: string, init: RegistryRequest = {}): Promise<Response> {
    const url = `${registryBaseUrl(this.ref.registry)}/v2/${this.ref.repository}${path}`;
    const cached = this.options.authCache.get(this.cacheKey);
    const first = await this.send(url, init, cached);
    if (first.status !== 401) return first;

    await discard(first);
    if (cached) this.options.authCache.delete(this.cacheKey);
    const authorization = await this.authorize(parseChallenge(first.headers.get('www-authenticate')), init.signal);
    const second = await this.send(url, init, authorization);
    if (second.status === 401 || second.status === 403) {
      await discard(second);
      this.options.authCache.delete(this.cacheKey);
      throw new HangarError('forbidden', `${this.label}: the registry ${this.ref.registry} refused the credentials (HTTP ${second.status})`);
    }
    return second;
  }

  /** One request with redirects followed by hand; Authorization goes only to the origin it was meant for. */
  private async send(url: string, init: RegistryRequest, authorization: string | null): Promise<Response> {
    let target = new URL(url);
    const origin = target.origin;
    let method = init.method ?? 'GET';
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const headers: Record<string, string> = { ...init.headers };
      if (authorization && target.origin === origin) headers['authorization'] = authorization;
      let response: Response;
      try {
        response = await this.options.fetch(target, { method, headers, redirect: 'manual', signal: init.signal });
      } catch (err) {
        if (init.signal?.aborted) throw err;
        throw new HangarError('failed', `${this.label}: cannot reach ${target.host}: ${describe(err)}`);
      }
      if (!REDIRECT_STATUSES.has(response.status)) return response;
      const location = response.headers.get('location');
      await discard(response);
      if (!location) throw new HangarError('failed', `${this.label}: ${target.host} answered a redirect without a Location`);
      target = new URL(location, target);
      if (response.status === 303) method = 'GET';
    }
    throw new HangarError('failed', `${this.label}: more than ${MAX_REDIRECTS} redirects from ${new URL(url).host}`);
  }

  private async authorize(challenge: Challenge | null, signal: AbortSignal | undefined): Promise<string> {
    const credentials = await this.options.credentials(this.ref.registry);
    if (challenge?.scheme === 'bearer' && challenge.params['realm']) {
      return this.fetchToken(challenge.params, credentials, signal);
    }
    if (challenge?.scheme === 'basic') {
      if (!credentials) {
        throw new HangarError('forbidden', `${this.label}: the registry ${this.ref.registry} requires a login and no credentials for it were found`);
      }
      const authorization = basic(credentials);
      this.options.authCache.set(this.cacheKey, authorization, BASIC_TTL_MS);
      return authorization;
    }
    throw new HangarError('forbidden', `${this.label}: the registry ${this.ref.registry} asks for an unsupported authentication (${challenge?.scheme ?? 'no challenge'})`);
  }

  private async fetchToken(params: Record<string, string>, credentials: Credentials | null, signal: AbortSignal | undefined): Promise<string> {
    const realm = new URL(params['realm']!);
    if (params['service']) realm.searchParams.set('service', params['service']);
    realm.searchParams.set('scope', params['scope'] ?? `repository:${this.ref.repository}:pull`);
    const response = await this.send(realm.href, { signal }, credentials ? basic(credentials) : null);
    if (!response.ok) {
      await discard(response);
      const why = credentials ? 'refused the credentials' : 'refused an anonymous pull (a login may be needed)';
      throw new HangarError('forbidden', `${this.label}: the token service ${realm.host} ${why} (HTTP ${response.status})`);
    }
    const body = (await response.json().catch(() => ({}))) as { token?: unknown; access_token?: unknown; expires_in?: unknown };
    const token = typeof body.token === 'string' ? body.token : body.access_token;
    if (typeof token !== 'string' || !token) {
      throw new HangarError('failed', `${this.label}: the token service ${realm.host} answered without a token`);
    }
    const seconds = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : DEFAULT_TOKEN_SECONDS;
    const authorization = `Bearer ${token}`;
    this.options.authCache.set(this.cacheKey, authorization, Math.max(seconds * 1000 - EXPIRY_MARGIN_MS, 1000));
    return authorization;
  }
}

/** Parses `Bearer realm="...",service="...",scope="..."` (scheme lower-cased). */
export function parseChallenge(header: string | null): Challenge | null {
  const match = header?.match(/^\s*(\S+)\s*(.*)$/);
  if (!match) return null;
  const params: Record<string, string> = {};
  for (const [, key, quoted, bare] of match[2]!.matchAll(/([\w-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))/g)) {
    params[key!.toLowerCase()] = quoted !== undefined ? quoted.replace(/\\(.)/g, '$1') : bare!;
  }
  return { scheme: match[1]!.toLowerCase(), params };
}

function basic({ username, password }: Credentials): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}

/** The response body chunk by chunk; leaving the loop early cancels the rest. */
export async function* bodyChunks(response: Response): AsyncGenerator<Uint8Array> {
  if (!response.body) return;
  const reader = response.body.getReader();
  let done = false;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      yield next.value;
    }
    done = true;
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
  }
}

/** Releases a response we will not read, so its connection returns to the pool. */
export async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => undefined);
}

export function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}
