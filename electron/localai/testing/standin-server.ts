// A stand-in for LocalAI's single-node server (`local-ai run`), written from LocalAI's code (core/http/app.go's error
// handler and render.go's 404 page, core/http/auth/middleware.go and public_routes.go, core/http/routes/localai.go and
// health.go, core/http/endpoints/localai/: system.go, backend_monitor.go, backend_load.go, backend.go;
// core/http/endpoints/openai/completion.go with core/http/middleware/request.go; core/services/monitoring/
// backend_monitor.go; core/services/galleryop/: enqueue.go, backends.go, service.go, operation.go, managers_local.go;
// core/gallery/: backends.go, upgrade.go, gallery.go; pkg/model/: loader.go, initializers.go, process.go, model.go) and
// Echo v4's binder. It answers with LocalAI's shapes, status codes and quirks (every 404 rewritten, Echo's
// "code=N, message=" prefix, 415 for an untyped body). Backends are registered from the backends directory at start
// and after its own installs only, and each loaded model runs a real gRPC backend (`run.sh --addr 127.0.0.1:PORT`,
// cwd the backend's directory, a direct child in its own process group). As in LocalAI, a loaded model's process is
// reused as long as it is alive, whatever its answers, and installs and upgrades swap directories without stopping
// anything: a model keeps running from a directory that is gone.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, closeSync, openSync, readFileSync } from 'node:fs';
import { cp, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import { localaiTimestamp, serializeMetadata } from '../../core/install/metadata.ts';
import { BackendCallError, BackendClient } from '../../core/supervisor/grpc-client.ts';

export interface StandInServerOptions {
  backendsDir: string;
  /** Model configs: model id → its backend name (LocalAI's `backend:` in the model YAML). */
  models: Record<string, string>;
  /** Legacy API keys (LocalAI's --api-keys); none: every route is open. */
  apiKeys?: string[];
  /** A gallery index.yaml path for /backends/apply and /backends/upgrade/:name; entries name a local directory as uri. */
  gallery?: string;
  /** Readiness: LocalAI's grpc.attempts (default 20) and attempts_sleep_time in ms here (default 2000; tests pass small values). */
  healthAttempts?: number;
  healthIntervalMs?: number;
  /** Reported by GET /version. */
  version?: string;
  /** How long the gallery index is kept once read (LocalAI: one hour), so an upgrade right after a gallery change installs what the index said then. */
  indexCacheMs?: number;
  /** The first cooldown after a failed load (LocalAI's LOCALAI_MODEL_LOAD_FAILURE_COOLDOWN, default 10 s; 0: none). */
  loadFailureCooldownMs?: number;
}

/** The LocalAI commit this was written from: what /version names as the build's commit. */
const LOCALAI_COMMIT = '82c191afadf5f005281e798ccfa0ffd0d5805030';
/** The gallery's name in LocalAI's config, used for `name@backend` lookups. */
const GALLERY_NAME = 'stand-in';
/** A passed health check is trusted this long (healthCheckTTL). */
const HEALTH_TTL_MS = 30_000;
/** One readiness Health call (HealthCheck's own timeout). */
const READINESS_CALL_MS = 10_000;
/** checkIsLoaded's Health call. */
const LOADED_CHECK_MS = 2 * 60_000;
/** Free before a shutdown stops the process (backendFreeTimeout). */
const FREE_MS = 5_000;
/** go-processmanager's Stop: SIGTERM to the group, polled, SIGKILL after the grace. */
const STOP_GRACE_MS = 15_000;
const STOP_POLL_MS = 100;
/** LocalAI puts no deadline on LoadModel, Predict and Status; a test should not hang forever either. */
const CALL_MS = 10 * 60_000;
const MAX_COOLDOWN_MS = 5 * 60_000;
const INDEX_CACHE_MS = 60 * 60_000;
/** Go's names for gRPC codes, as `rpc error: code = … desc = …` spells them. */
const GO_CODES = ['OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists', 'PermissionDenied', 'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange', 'Unimplemented', 'Internal', 'Unavailable', 'DataLoss', 'Unauthenticated'];
/** StatusResponse.State numbers; UNINITIALIZED (0) is omitted on the wire. */
const STATES: Record<string, number> = { UNINITIALIZED: 0, BUSY: 1, READY: 2, ERROR: -1 };
/** Routes the auth middleware lets through without a key (the implemented ones of LocalAI's public list). */
const PUBLIC = new Set(['GET /healthz', 'GET /readyz']);

interface BackendProcess {
  child: ChildProcess;
  pid: number;
  address: string;
  stderrPath: string;
  exited: Promise<void>;
}

interface LoadedModel {
  client: BackendClient;
  /** Null when the registered run file was not a file and its path was dialled as an address, as LocalAI does. */
  process: BackendProcess | null;
  healthyAt: number;
}

interface SystemBackend {
  name: string;
  runFile: string;
  isMeta: boolean;
  metadata: Metadata;
}

type Metadata = Partial<Record<(typeof METADATA_KEYS)[number], string>>;
const METADATA_KEYS = ['alias', 'meta_backend_for', 'name', 'gallery_url', 'installed_at', 'version', 'uri', 'digest'] as const;

interface GalleryEntry {
  name: string;
  uri?: string;
  version?: string;
  alias?: string;
  capabilities?: Record<string, string>;
}

interface Op {
  kind: 'install' | 'upgrade' | 'delete';
  name: string;
  force: boolean;
}

/** galleryop.OpStatus, the fields a single node sets. */
interface OpStatus {
  deletion?: boolean;
  error?: string;
  processed?: boolean;
  message: string;
  progress?: number;
  phase?: string;
  gallery_element_name?: string;
  cancellable?: boolean;
}

interface Incoming {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Go's ContentLength != 0: a declared non-zero length, or a chunked body. */
  hasBody: boolean;
  params: string[];
}

interface Answer {
  status: number;
  /** JSON, written as Echo writes it; undefined: no body (c.NoContent). */
  body?: unknown;
  html?: string;
  headers?: Record<string, string>;
}

interface Route {
  method: string;
  pattern: RegExp;
  handle: (request: Incoming) => Answer | Promise<Answer>;
}

/** An echo.HTTPError: its text reaches clients as `code=N, message=…`. */
class HttpError extends Error {
  constructor(
    readonly code: number,
    text: string,
    internal?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(`code=${code}, message=${text}${internal === undefined ? '' : `, internal=${internal}`}`);
  }
}

class CooldownError extends Error {
  constructor(
    id: string,
    readonly retryAfterMs: number,
  ) {
    super(`model ${JSON.stringify(id)} load is in cooldown after a recent failure; retry after ${goSeconds(retryAfterMs)}`);
  }
}

class ModelNotFoundError extends Error {
  constructor() {
    super('model not found');
  }
}

export class StandInServer {
  private server: Server | null = null;
  private port = 0;
  private stateRoot = '';
  private closed = false;
  private spawnCount = 0;
  /** The loader's externalBackends: name → run file. Registrations only add; a delete job removes its exact name. */
  private readonly externalBackends = new Map<string, string>();
  private readonly store = new Map<string, LoadedModel>();
  private readonly loading = new Map<string, Promise<LoadedModel>>();
  private readonly shutdowns = new Map<string, Promise<void>>();
  private readonly loadFailures = new Map<string, { consecutive: number; until: number }>();
  private readonly children = new Set<BackendProcess>();
  private readonly statuses = new Map<string, OpStatus>();
  /** The gallery worker: one operation at a time. */
  private queue: Promise<void> = Promise.resolve();
  private indexCache: { text: string; at: number } | null = null;
  private readonly routes: Route[];

  constructor(readonly options: StandInServerOptions) {
    this.routes = this.routeTable();
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get spawned(): number {
    return this.spawnCount;
  }

  pids(): Map<string, number> {
    return new Map([...this.store].flatMap(([id, model]) => (model.process ? [[id, model.process.pid] as const] : [])));
  }

  async start(): Promise<void> {
    await mkdir(this.options.backendsDir, { recursive: true });
    this.stateRoot = await mkdtemp(join(tmpdir(), 'standin-server-'));
    await this.registerBackends();
    const server = (this.server = createServer((req, res) => void this.serve(req, res).catch(() => res.destroy())));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    this.port = (server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.closed = true;
    await this.closeServer();
    // LocalAI's graceful termination: StopAllGRPC shuts each loaded model down (Free, then the stop).
    for (const id of [...this.store.keys()]) await this.shutdownModel(id).catch(() => undefined);
    await Promise.all([...this.children].map((proc) => this.stopProcess(proc)));
    await this.queue;
    await rm(this.stateRoot, { recursive: true, force: true });
  }

  async crash(): Promise<void> {
    this.closed = true;
    const closing = this.closeServer();
    for (const proc of this.children) signalGroup(proc.pid, 'SIGKILL');
    await Promise.all([closing, ...[...this.children].map((proc) => proc.exited)]);
    await rm(this.stateRoot, { recursive: true, force: true });
  }

  private async closeServer(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  }

  // ---------------------------------------------------------------------------------------------- HTTP

  private routeTable(): Route[] {
    const route = (method: string, path: string, handle: Route['handle']): Route => ({ method, pattern: new RegExp(`^${path.replace(/:\w+/g, '([^/]+)')}$`), handle });
    const noContent = (): Answer => ({ status: 200 });
    return [
      route('GET', '/healthz', noContent),
      route('GET', '/readyz', noContent),
      route('GET', '/version', () => ({ status: 200, body: { version: this.options.version === undefined ? ' ()' : `${this.options.version} (${LOCALAI_COMMIT})` } })),
      route('GET', '/system', () => this.system()),
      ...['', '/v1'].flatMap((prefix) => [
        route('GET', `${prefix}/backend/monitor`, (r) => this.monitor(r)),
        route('POST', `${prefix}/backend/shutdown`, (r) => this.shutdown(r)),
        route('POST', `${prefix}/backend/load`, (r) => this.loadEndpoint(r)),
        route('POST', `${prefix}/completions`, (r) => this.completions(r)),
      ]),
      route('POST', '/backends/apply', (r) => {
        const body = bind(r);
        return this.enqueue(r, { kind: 'install', name: text(body, 'id'), force: flag(body, 'force') });
      }),
      route('POST', '/backends/upgrade/:name', (r) => this.enqueue(r, { kind: 'upgrade', name: r.params[0]!, force: false })),
      route('POST', '/backends/delete/:name', (r) => this.enqueue(r, { kind: 'delete', name: r.params[0]!, force: false })),
      route('GET', '/backends/jobs/:uuid', (r) => {
        const status = this.statuses.get(r.params[0]!);
        if (!status) throw new Error('could not find any status for ID');
        return { status: 200, body: opStatusJson(status) };
      }),
      route('GET', '/backends', async () => ({ status: 200, body: [...(await this.listSystemBackends()).values()].map(systemBackendJson) })),
    ];
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
      answer = this.authorize(request) ?? (await this.dispatch(request));
    } catch (error) {
      answer = failure(request, error);
    }
    write(res, answer, url.searchParams.has('pretty'));
  }

  /** The auth middleware with legacy keys: it runs around routing, so an unknown path without a key is a 401 too. */
  private authorize(request: Incoming): Answer | null {
    const keys = this.options.apiKeys ?? [];
    if (keys.length === 0) return null;
    const key = extractKey(request.headers);
    if (key && keys.some((valid) => sameKey(key, valid))) return null;
    if (PUBLIC.has(`${request.method} ${request.path}`) || request.path.startsWith('/api/node/')) return null;
    return { status: 401, headers: { 'WWW-Authenticate': 'Bearer' }, body: { error: { code: 401, message: 'An authentication key is required', type: 'invalid_request_error' } } };
  }

  private async dispatch(request: Incoming): Promise<Answer> {
    const matching = this.routes.filter((route) => route.pattern.test(request.path));
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

  // ---------------------------------------------------------------------------------------------- handlers

  private system(): Answer {
    const loaded = [...this.store.keys()].map((id) => {
      const backend = this.options.models[id];
      return { id, ...(backend && { backend }) };
    });
    return { status: 200, body: { backends: [...this.externalBackends.keys()], loaded_models: loaded } };
  }

  /** BackendMonitorEndpoint → CheckAndSample: 500 when not loaded, else the backend's own Status. */
  private async monitor(request: Incoming): Promise<Answer> {
    const model = request.query.get('model') || text(bind(request), 'model');
    if (!model) throw new HttpError(400, 'model query parameter is required');
    const loaded = await this.checkIsLoaded(model);
    if (!loaded) throw new Error(`backend ${model} is not currently loaded`);
    let state: string;
    try {
      ({ state } = await loaded.client.status(CALL_MS));
    } catch (error) {
      // The fallback samples the process found under `<model file>.bin`, a key the store (keyed by model id) lacks.
      const key = model.endsWith('.bin') ? model : `${model}.bin`;
      throw new Error(`backend ${model} experienced an error retrieving status info via rpc: ${grpcText(error)}, then failed local node process sample: no grpc backend found for ${key}`);
    }
    const number = STATES[state] ?? 0;
    return { status: 200, body: number === 0 ? {} : { state: number } };
  }

  private async shutdown(request: Incoming): Promise<Answer> {
    const model = text(bind(request), 'model');
    if (!model) throw new HttpError(400, 'model is required');
    try {
      await this.shutdownModel(model);
    } catch (error) {
      if (error instanceof ModelNotFoundError) throw new HttpError(404, `model ${JSON.stringify(model)} is not loaded on this instance or on any worker node`);
      throw error;
    }
    return { status: 200, body: { message: 'model stopped' } };
  }

  /** LoadModelEndpoint: its 400 and 500 are written directly, not through the error handler. */
  private async loadEndpoint(request: Incoming): Promise<Answer> {
    const model = text(bind(request), 'model');
    if (!model) return { status: 400, body: { loaded: null, message: 'model is required' } };
    try {
      await this.load(this.configured(model));
    } catch (error) {
      return { status: 500, body: { loaded: null, message: `failed to load model: ${(error as Error).message}` } };
    }
    return { status: 200, body: { loaded: [model], message: 'model loaded' } };
  }

  private async completions(request: Incoming): Promise<Answer> {
    let body: Record<string, unknown>;
    try {
      body = bind(request);
    } catch (error) {
      throw new HttpError(400, `failed parsing request body: ${(error as Error).message}`);
    }
    const model = text(body, 'model') || request.query.get('model') || '';
    if (!model) throw new HttpError(400, 'Bad Request');
    if (!(model in this.options.models) && !model.includes('/')) {
      // SetModelAndConfig answers this itself: it is not rewritten like the error handler's 404s.
      return { status: 404, body: { error: { code: 404, message: `model ${JSON.stringify(model)} not found. To see available models, call GET /v1/models`, type: 'invalid_request_error' } } };
    }
    const choices: object[] = [];
    for (const [index, prompt] of promptStrings(body.prompt).entries()) {
      const loaded = await this.load(this.configured(model));
      const reply = await loaded.client.predict(prompt, CALL_MS).catch((error: unknown) => {
        throw new Error(grpcText(error));
      });
      choices.push({ index, finish_reason: 'stop', ...(reply && { text: reply }) });
    }
    const id = (request.headers['x-correlation-id'] as string | undefined) || randomUUID();
    return {
      status: 200,
      body: {
        created: Math.floor(Date.now() / 1000),
        object: 'text_completion',
        id,
        model,
        ...(choices.length > 0 && { choices }),
        usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      },
    };
  }

  /** A model the stand-in has a config for; LocalAI would synthesize one and try every backend (not reproduced). */
  private configured(model: string): string {
    if (!(model in this.options.models)) throw new Error(`stand-in: no model config for ${JSON.stringify(model)}`);
    return model;
  }

  // ---------------------------------------------------------------------------------------------- model loader

  /** ModelLoader.Load: reuse what checkIsLoaded keeps, honour the failure cooldown, coalesce concurrent loads. */
  private async load(id: string, checkCooldown = true): Promise<LoadedModel> {
    const loaded = (await this.checkIsLoaded(id)) ?? this.store.get(id);
    if (loaded) return loaded;
    const failure = this.loadFailures.get(id);
    if (checkCooldown && failure && failure.until > Date.now()) throw new CooldownError(id, failure.until - Date.now());
    const pending = this.loading.get(id);
    if (pending) {
      await pending.catch(() => undefined);
      // The leader failed: retry once as part of this burst, past the cooldown it just started.
      return (await this.checkIsLoaded(id)) ?? this.load(id, false);
    }
    const leading = this.lead(id);
    this.loading.set(id, leading);
    try {
      return await leading;
    } finally {
      this.loading.delete(id);
    }
  }

  private async lead(id: string): Promise<LoadedModel> {
    let model: LoadedModel;
    try {
      model = await this.startModel(id);
    } catch (error) {
      this.recordLoadFailure(id);
      throw new Error(`failed to load model with internal loader: ${(error as Error).message}`);
    }
    this.loadFailures.delete(id);
    this.store.set(id, model);
    return model;
  }

  private recordLoadFailure(id: string): void {
    const base = this.options.loadFailureCooldownMs ?? 10_000;
    if (base <= 0) return;
    const consecutive = (this.loadFailures.get(id)?.consecutive ?? 0) + 1;
    const backoff = Math.min(base * 2 ** Math.min(consecutive - 1, 20), MAX_COOLDOWN_MS);
    this.loadFailures.set(id, { consecutive, until: Date.now() + backoff });
  }

  /**
   * checkIsLoaded: a model that passed a health check in the last 30 s is reused as is; otherwise Health is asked, and
   * only a process that is no longer alive gets the model evicted. A live process that fails Health is reused.
   */
  private async checkIsLoaded(id: string): Promise<LoadedModel | null> {
    await this.shutdowns.get(id);
    const model = this.store.get(id);
    if (!model) return null;
    if (Date.now() - model.healthyAt < HEALTH_TTL_MS) return model;
    const healthy = await model.client.health(LOADED_CHECK_MS).then((answer) => answer === 'OK', () => false);
    if (!healthy && model.process && !isAlive(model.process.pid)) {
      await this.deleteProcess(id, true);
      return null;
    }
    model.healthyAt = Date.now();
    return model;
  }

  /** grpcModel + spawnGRPCModel: the registered run file, readiness by Health attempts, then LoadModel. */
  private async startModel(id: string): Promise<LoadedModel> {
    const backend = this.options.models[id]!.toLowerCase();
    const runFile = this.externalBackends.get(backend);
    if (!runFile) throw new Error(`backend not found: ${backend}`);
    const proc = (await isFile(runFile)) ? await this.startProcess(runFile) : null;
    const client = new BackendClient(proc?.address ?? runFile);
    try {
      if (!(await this.waitHealthy(client))) throw startupError(proc);
      const modelPath = resolve(this.options.backendsDir, '..', 'models');
      const result = await client.loadModel({ model: id, modelFile: join(modelPath, id), modelPath }, CALL_MS).catch((error: unknown) => {
        throw new Error(`could not load model: ${grpcText(error)}`);
      });
      if (!result.success) throw new Error(`could not load model (no success): ${result.message}`);
    } catch (error) {
      client.close();
      if (proc) await this.stopProcess(proc);
      throw error;
    }
    return { client, process: proc, healthyAt: 0 };
  }

  /** LocalAI's readiness loop: up to `attempts` Health calls, a fixed sleep after each one that fails. */
  private async waitHealthy(client: BackendClient): Promise<boolean> {
    for (let attempt = 0; attempt < (this.options.healthAttempts ?? 20); attempt++) {
      if (await client.health(READINESS_CALL_MS).then((answer) => answer === 'OK', () => false)) return true;
      await sleep(this.options.healthIntervalMs ?? 2_000);
    }
    return false;
  }

  /** startProcess: `run.sh --addr 127.0.0.1:PORT` from the backend's directory, its output in a state dir. */
  private async startProcess(runFile: string): Promise<BackendProcess> {
    if (this.closed) throw new Error('stand-in server stopped');
    if (((await stat(runFile)).mode & 0o111) === 0) chmodSync(runFile, 0o700);
    const address = `127.0.0.1:${await freePort()}`;
    const stateDir = await mkdtemp(join(this.stateRoot, 'go-processmanager'));
    const stdout = openSync(join(stateDir, 'stdout'), 'w');
    const stderr = openSync(join(stateDir, 'stderr'), 'w');
    // Unset so the echo backend exits once its parent is gone, as LocalAI's backends do.
    const { LOCALAI_BACKEND_PARENT_WATCH: _parentWatch, ...env } = process.env;
    const child = spawn(runFile, ['--addr', address], {
      cwd: resolve(dirname(runFile)),
      detached: true,
      stdio: ['ignore', stdout, stderr],
      env: { ...env, HANGAR_NODE: process.execPath },
    });
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    try {
      await once(child, 'spawn');
    } finally {
      closeSync(stdout);
      closeSync(stderr);
    }
    const proc: BackendProcess = { child, pid: child.pid!, address, stderrPath: join(stateDir, 'stderr'), exited };
    this.spawnCount++;
    this.children.add(proc);
    void exited.then(() => this.children.delete(proc));
    return proc;
  }

  private async stopProcess(proc: BackendProcess): Promise<void> {
    signalGroup(proc.pid, 'SIGTERM');
    const deadline = Date.now() + STOP_GRACE_MS;
    while (isAlive(proc.pid) && Date.now() < deadline) await sleep(STOP_POLL_MS);
    if (isAlive(proc.pid)) signalGroup(proc.pid, 'SIGKILL');
    await proc.exited;
  }

  /** ShutdownModel, serialised per model: what checks the model meanwhile waits and finds it gone. */
  private async shutdownModel(id: string): Promise<void> {
    const stopping = this.deleteProcess(id, false);
    this.shutdowns.set(id, stopping.catch(() => undefined));
    try {
      await stopping;
    } finally {
      this.shutdowns.delete(id);
    }
  }

  /** deleteProcess: a bounded Free (skipped when forced), the process stop, then the store entry goes. */
  private async deleteProcess(id: string, force: boolean): Promise<void> {
    const model = this.store.get(id);
    if (!model) throw new ModelNotFoundError();
    if (!force) await model.client.free(FREE_MS).catch(() => undefined);
    if (model.process) await this.stopProcess(model.process);
    this.store.delete(id);
    model.client.close();
  }

  // ---------------------------------------------------------------------------------------------- backends on disk

  /** ListSystemBackends: each directory with a run.sh, each meta's name (its concrete's run.sh), each alias. */
  private async listSystemBackends(): Promise<Map<string, SystemBackend>> {
    const backends = new Map<string, SystemBackend>();
    const aliases = new Map<string, { dir: string; runFile: string; metadata: Metadata }[]>();
    const entries = (await readdir(this.options.backendsDir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (!entry.isDirectory()) continue;
      const dir = join(this.options.backendsDir, entry.name);
      const runFile = join(dir, 'run.sh');
      const metadata = (await readMetadata(dir)) ?? { name: entry.name };
      if (await exists(runFile)) backends.set(entry.name, { name: entry.name, runFile, isMeta: false, metadata });
      if (metadata.alias) aliases.set(metadata.alias, [...(aliases.get(metadata.alias) ?? []), { dir: entry.name, runFile, metadata }]);
      if (metadata.meta_backend_for) {
        const name = metadata.name ?? '';
        backends.set(name, { name, runFile: join(this.options.backendsDir, metadata.meta_backend_for, 'run.sh'), isMeta: true, metadata });
      }
    }
    for (const [alias, candidates] of aliases) {
      // A CPU machine's build-tag preference, else the first directory.
      const chosen = candidates.find((c) => c.dir.toLowerCase().includes('cpu')) ?? candidates[0]!;
      backends.set(alias, { name: alias, runFile: chosen.runFile, isMeta: false, metadata: chosen.metadata });
    }
    return backends;
  }

  /** RegisterBackends: adds or overwrites, never removes. */
  private async registerBackends(): Promise<void> {
    for (const backend of (await this.listSystemBackends()).values()) this.externalBackends.set(backend.name, backend.runFile);
  }

  private enqueue(request: Incoming, op: Op): Answer {
    const id = randomUUID();
    this.statuses.set(id, { message: 'queued', phase: 'queued', gallery_element_name: op.name, deletion: op.kind === 'delete', cancellable: true });
    this.queue = this.queue.then(() => this.runOp(id, op));
    const host = (request.headers['x-forwarded-host'] as string | undefined) ?? request.headers.host ?? `127.0.0.1:${this.port}`;
    return { status: 200, body: { id, status_url: `http://${host}/backends/jobs/${id}` } };
  }

  /** backendHandler and the worker's updateError: each status replaces the last (keeping the deletion flag). */
  private async runOp(id: string, op: Op): Promise<void> {
    if (this.closed) return;
    const update = (status: OpStatus) => this.statuses.set(id, { ...status, deletion: status.deletion || this.statuses.get(id)?.deletion });
    update({ message: `processing backend: ${op.name}`, progress: 0, cancellable: op.kind !== 'delete' });
    try {
      if (op.kind === 'upgrade') await this.upgradeBackend(op.name);
      else if (op.kind === 'delete') await this.deleteBackend(op.name);
      else await this.installFromGallery(op.name, op.force);
    } catch (error) {
      // A failed install or upgrade removes what is there, the working install included.
      if (op.kind !== 'delete') await this.deleteBackendFromSystem(op.name).catch(() => undefined);
      const message = (error as Error).message;
      update({ error: message, processed: true, message: `error: ${message}` });
      return;
    }
    update({ deletion: op.kind === 'delete', processed: true, gallery_element_name: op.name, message: 'completed', progress: 100, cancellable: false });
  }

  /** InstallBackendFromGallery: an installed, runnable backend is left alone (and not registered) unless forced. */
  private async installFromGallery(name: string, force: boolean): Promise<void> {
    if (!force) {
      const existing = (await this.listSystemBackends()).get(name);
      if (existing && (await isFile(existing.runFile))) return;
    }
    if (!name) throw new Error('backend name is empty');
    const entries = await this.galleryEntries();
    const entry = findGalleryElement(entries, name);
    if (!entry) throw new Error(`no backend found with name ${JSON.stringify(name)}`);
    if (!isMeta(entry)) return this.installBackend(entry);
    const concrete = entry.capabilities!.default ?? entry.capabilities!.cpu;
    const best = concrete === undefined ? null : findGalleryElement(entries, concrete);
    if (!best) throw new Error(`no backend found with capabilities ${JSON.stringify(entry.capabilities)}`);
    await this.installBackend(best);
    // The meta's directory comes after the concrete's registration: the meta name is not registered until the next one.
    const dir = join(this.options.backendsDir, entry.name);
    await mkdir(dir, { recursive: true, mode: 0o750 });
    await writeMetadata(dir, { meta_backend_for: best.name, name: entry.name, gallery_url: galleryUrl(this.options.gallery), installed_at: localaiTimestamp(), version: best.version });
  }

  /** InstallBackend: stage into `<name>.install-tmp`, move the live one to `.install-backup`, swap, register. */
  private async installBackend(entry: GalleryEntry): Promise<void> {
    await mkdir(this.options.backendsDir, { recursive: true, mode: 0o750 });
    const dir = join(this.options.backendsDir, entry.name);
    const staging = `${dir}.install-tmp`;
    const backup = `${dir}.install-backup`;
    if ((await lstat(dir).catch(() => null))?.isDirectory() === false) await rm(dir);
    await rm(staging, { recursive: true, force: true });
    await rm(backup, { recursive: true, force: true });
    await mkdir(staging, { recursive: true, mode: 0o750 });
    try {
      await copyBackend(entry.uri ?? '', staging, (reason) => `failed copying: ${reason}`, (reason) => `failed to download backend ${JSON.stringify(entry.uri ?? '')}: ${reason}`);
      const stagedRun = join(staging, 'run.sh');
      if (!(await exists(stagedRun))) throw new Error(`not a valid backend: run file not found ${JSON.stringify(stagedRun)}`);
      await writeMetadata(staging, { name: entry.name, gallery_url: galleryUrl(this.options.gallery), installed_at: localaiTimestamp(), version: entry.version, uri: entry.uri, alias: entry.alias });
      if (await exists(dir)) await rename(dir, backup).catch(wrap('failed to move current backend to backup'));
      await rename(staging, dir).catch(async (error: Error) => {
        await rename(backup, dir).catch(() => undefined);
        throw new Error(`failed to move new backend into place: ${error.message}`);
      });
      await rm(backup, { recursive: true, force: true });
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    await this.registerBackends();
  }

  /** UpgradeBackend: `<name>.upgrade-tmp`, live → `<name>.backup`, tmp → live, metadata, register, drop the backup. */
  private async upgradeBackend(name: string): Promise<void> {
    const installed = (await this.listSystemBackends()).get(name);
    if (!installed) throw new Error(`backend ${JSON.stringify(name)}: backend not found`);
    if (installed.metadata.meta_backend_for) return this.upgradeBackend(installed.metadata.meta_backend_for);
    const entry = findGalleryElement(await this.galleryEntries(), name);
    if (!entry) throw new Error(`no gallery entry found for backend ${JSON.stringify(name)}`);
    const dir = join(this.options.backendsDir, name);
    const tmp = `${dir}.upgrade-tmp`;
    const backup = `${dir}.backup`;
    await rm(tmp, { recursive: true, force: true });
    await rm(backup, { recursive: true, force: true });
    await mkdir(tmp, { recursive: true, mode: 0o750 });
    try {
      await copyBackend(entry.uri ?? '', tmp, (reason) => `failed to copy backend from directory: ${reason}`, (reason) => `failed to download backend: ${reason}`);
      if (!(await exists(join(tmp, 'run.sh')))) throw new Error('upgrade validation failed: run.sh not found in new backend');
      await rename(dir, backup).catch(wrap('failed to move current backend to backup'));
      await rename(tmp, dir).catch(async (error: Error) => {
        await rename(backup, dir).catch(() => undefined);
        throw new Error(`failed to move new backend into place: ${error.message}`);
      });
    } catch (error) {
      await rm(tmp, { recursive: true, force: true });
      throw error;
    }
    const metadata = { name, version: entry.version, uri: entry.uri, installed_at: localaiTimestamp(), alias: installed.metadata.alias, gallery_url: galleryUrl(this.options.gallery) };
    await writeMetadata(dir, metadata).catch(() => undefined);
    // Registered while `<name>.backup` still holds a run.sh: that name is registered too, and stays.
    await this.registerBackends().catch(() => undefined);
    await rm(backup, { recursive: true, force: true });
  }

  /** LocalBackendManager.DeleteBackend: the exact name is unregistered whether or not the removal worked. */
  private async deleteBackend(name: string): Promise<void> {
    try {
      await this.deleteBackendFromSystem(name);
    } finally {
      this.externalBackends.delete(name);
    }
  }

  private async deleteBackendFromSystem(name: string): Promise<void> {
    const backends = await this.listSystemBackends();
    const backend = backends.get(name) ?? [...backends.values()].find((b) => b.metadata.name === name && !b.isMeta);
    if (!backend) throw new Error(`backend ${JSON.stringify(name)}: backend not found`);
    let dir = join(this.options.backendsDir, backend.name);
    if (!(await exists(dir))) {
      // An alias has no directory of its own: the one whose metadata names it goes.
      let found: string | null = null;
      for (const entry of await readdir(this.options.backendsDir, { withFileTypes: true })) {
        if (!entry.isDirectory() || found) continue;
        const metadata = await readMetadata(join(this.options.backendsDir, entry.name));
        if (metadata?.alias && (metadata.alias === name || metadata.alias === backend.name)) found = join(this.options.backendsDir, entry.name);
      }
      if (!found) throw new Error(`no backend found with name ${JSON.stringify(name)}`);
      dir = found;
    }
    const concrete = (await readMetadata(dir))?.meta_backend_for;
    if (concrete) await rm(join(this.options.backendsDir, concrete), { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  }

  /** getGalleryElements: the index as read at most `indexCacheMs` ago (an empty one is read again). */
  private async galleryEntries(): Promise<GalleryEntry[]> {
    const file = this.options.gallery;
    if (!file) return [];
    const cached = this.indexCache;
    if (cached && Date.now() - cached.at < (this.options.indexCacheMs ?? INDEX_CACHE_MS)) {
      const entries = parseIndex(cached.text);
      if (entries.length > 0) return entries;
    }
    const text = await readFile(file, 'utf8').catch(wrap('failed to read gallery elements'));
    this.indexCache = { text, at: Date.now() };
    return parseIndex(text);
  }
}

// ------------------------------------------------------------------------------------------------ helpers

/** Echo's DefaultBinder for a body: nothing when there is none, JSON or a form by type, else 415. */
function bind(request: Incoming): Record<string, unknown> {
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

function text(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw typeError('string', value, field);
  return value;
}

/** A JSON bool, or a form value as strconv.ParseBool reads it. */
function flag(body: Record<string, unknown>, field: string): boolean {
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

/** The OpenAI `prompt`: a string or a list of them. */
function promptStrings(prompt: unknown): string[] {
  if (typeof prompt === 'string') return [prompt];
  return Array.isArray(prompt) ? prompt.filter((p): p is string => typeof p === 'string') : [];
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

/** A gRPC failure as Go's status error prints it. */
function grpcText(error: unknown): string {
  if (error instanceof BackendCallError) return `rpc error: code = ${GO_CODES[error.grpcCode] ?? `Code(${error.grpcCode})`} desc = ${error.details}`;
  return (error as Error).message;
}

/** grpcStartupError: a process that exited says how, with its last stderr line. */
function startupError(proc: BackendProcess | null): Error {
  const child = proc?.child;
  if (!child || (child.exitCode === null && child.signalCode === null)) return new Error('grpc service not ready');
  const code = child.exitCode ?? -1;
  const lines = readFileSync(proc.stderrPath, 'utf8').trim().split('\n');
  const last = lines[lines.length - 1]!.trim();
  return new Error(`grpc service not ready: backend process exited with code ${code}${last ? `: ${last}` : ''}`);
}

/** Go's Duration.Round(time.Second).String(). */
function goSeconds(ms: number): string {
  const total = Math.round(ms / 1000);
  const [hours, minutes, seconds] = [Math.floor(total / 3600), Math.floor((total % 3600) / 60), total % 60];
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}

/** freeport.GetFreePort: a port the OS hands a listening socket, released at once. */
async function freePort(): Promise<number> {
  const server = createNetServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return port;
}

/** IsAlive: signal 0 to the pid. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false);
}

async function isFile(path: string): Promise<boolean> {
  return stat(path).then((s) => s.isFile(), () => false);
}

function wrap(prefix: string): (error: Error) => never {
  return (error) => {
    throw new Error(`${prefix}: ${error.message}`);
  };
}

/** A gallery uri that is a directory is copied; anything else would be downloaded, which the stand-in does not do. */
async function copyBackend(uri: string, into: string, copyFailed: (reason: string) => string, downloadFailed: (reason: string) => string): Promise<void> {
  if (!(await stat(uri).then((s) => s.isDirectory(), () => false))) throw new Error(downloadFailed('the stand-in installs from local directories only'));
  await cp(uri, into, { recursive: true }).catch((error: Error) => {
    throw new Error(copyFailed(error.message));
  });
}

async function readMetadata(dir: string): Promise<Metadata | null> {
  const path = join(dir, 'metadata.json');
  const raw = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw new Error(`failed to read metadata file ${JSON.stringify(path)}: ${error.message}`);
  });
  if (raw === null) return null;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(raw) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`failed to unmarshal metadata file ${JSON.stringify(path)}: ${(error as Error).message}`);
  }
  return Object.fromEntries(METADATA_KEYS.flatMap((key) => (typeof parsed[key] === 'string' && parsed[key] ? [[key, parsed[key]]] : [])));
}

/** writeBackendMetadata: json.MarshalIndent of BackendMetadata, empty fields omitted. */
async function writeMetadata(dir: string, md: Metadata): Promise<void> {
  const field = (key: keyof Metadata) => md[key] || null;
  const text = serializeMetadata({
    name: md.name ?? '',
    alias: field('alias'),
    metaBackendFor: field('meta_backend_for'),
    galleryUrl: field('gallery_url'),
    installedAt: md.installed_at ?? '',
    version: field('version'),
    uri: field('uri'),
    digest: field('digest'),
    sha256: null,
  });
  await writeFile(join(dir, 'metadata.json'), text, { mode: 0o644 });
}

function galleryUrl(file: string | undefined): string | undefined {
  return file === undefined ? undefined : `file://${resolve(file)}`;
}

function parseIndex(textIndex: string): GalleryEntry[] {
  try {
    return (parse(textIndex) as GalleryEntry[] | null) ?? [];
  } catch (error) {
    throw new Error(`failed to read gallery elements: ${(error as Error).message}`);
  }
}

function isMeta(entry: GalleryEntry): boolean {
  return Object.keys(entry.capabilities ?? {}).length > 0 && !entry.uri;
}

/** FindGalleryElement: by name, case-insensitively, or as `gallery@name`; a path separator reads as `__`. */
function findGalleryElement(entries: GalleryEntry[], wanted: string): GalleryEntry | null {
  const name = wanted.replaceAll('/', '__').toLowerCase();
  const key = (entry: GalleryEntry) => (name.includes('@') ? `${GALLERY_NAME}@${entry.name}` : entry.name).toLowerCase();
  return entries.find((entry) => key(entry) === name) ?? null;
}

/** gallery.SystemBackend as GET /backends writes it: Go field names, no json tags. */
function systemBackendJson(backend: SystemBackend): object {
  const metadata = Object.fromEntries(METADATA_KEYS.flatMap((key) => (backend.metadata[key] ? [[key, backend.metadata[key]]] : [])));
  return { Name: backend.name, RunFile: backend.runFile, IsMeta: backend.isMeta, IsSystem: false, Metadata: metadata };
}

/** OpStatus's wire form, in its struct order. */
function opStatusJson(status: OpStatus): object {
  return {
    deletion: status.deletion ?? false,
    file_name: '',
    ...(status.error && { error: status.error }),
    processed: status.processed ?? false,
    message: status.message,
    progress: status.progress ?? 0,
    ...(status.phase && { phase: status.phase }),
    file_size: '',
    downloaded_size: '',
    gallery_element_name: status.gallery_element_name ?? '',
    cancelled: false,
    cancellable: status.cancellable ?? false,
  };
}
