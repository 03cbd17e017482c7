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
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GalleryService, type Op } from './standin-gallery.ts';
import { bind, flag, HttpError, route, serve, text, type Answer, type Incoming, type Route } from './standin-http.ts';
import { CALL_MS, grpcText, ModelLoader, ModelNotFoundError } from './standin-loader.ts';

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
  /** Where it listens (LocalAI's --address); default 127.0.0.1 on a free port. */
  address?: { host: string; port: number };
}

/** The LocalAI commit this was written from: what /version names as the build's commit. */
const LOCALAI_COMMIT = '82c191afadf5f005281e798ccfa0ffd0d5805030';
/** StatusResponse.State numbers; UNINITIALIZED (0) is omitted on the wire. */
const STATES: Record<string, number> = { UNINITIALIZED: 0, BUSY: 1, READY: 2, ERROR: -1 };

export class StandInServer {
  private server: Server | null = null;
  private port = 0;
  private readonly loader: ModelLoader;
  private readonly gallery: GalleryService;
  private readonly routes: Route[];

  constructor(readonly options: StandInServerOptions) {
    this.loader = new ModelLoader(options);
    this.gallery = new GalleryService(options, this.loader.externalBackends);
    this.routes = this.routeTable();
  }

  get url(): string {
    return `http://${this.options.address?.host ?? '127.0.0.1'}:${this.port}`;
  }

  get spawned(): number {
    return this.loader.spawned;
  }

  pids(): Map<string, number> {
    return this.loader.pids();
  }

  async start(): Promise<void> {
    await mkdir(this.options.backendsDir, { recursive: true });
    await this.loader.start();
    await this.gallery.registerBackends();
    const server = (this.server = createServer((req, res) => void serve(req, res, this.routes, this.options.apiKeys ?? []).catch(() => res.destroy())));
    server.listen(this.options.address?.port ?? 0, this.options.address?.host ?? '127.0.0.1');
    await once(server, 'listening');
    this.port = (server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.loader.close();
    this.gallery.close();
    await this.closeServer();
    await this.loader.stopAll();
    await this.gallery.idle();
    await this.loader.removeState();
  }

  async crash(): Promise<void> {
    this.loader.close();
    this.gallery.close();
    await Promise.all([this.closeServer(), this.loader.killAll()]);
    await this.loader.removeState();
  }

  private async closeServer(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  }

  private routeTable(): Route[] {
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
      route('GET', '/backends/jobs/:uuid', (r) => ({ status: 200, body: this.gallery.jobStatus(r.params[0]!) })),
      route('GET', '/backends', async () => ({ status: 200, body: await this.gallery.listed() })),
    ];
  }

  private system(): Answer {
    const loaded = this.loader.loadedIds().map((id) => {
      const backend = this.options.models[id];
      return { id, ...(backend && { backend }) };
    });
    return { status: 200, body: { backends: [...this.loader.externalBackends.keys()], loaded_models: loaded } };
  }

  /** BackendMonitorEndpoint → CheckAndSample: 500 when not loaded, else the backend's own Status. */
  private async monitor(request: Incoming): Promise<Answer> {
    const model = request.query.get('model') || text(bind(request), 'model');
    if (!model) throw new HttpError(400, 'model query parameter is required');
    const loaded = await this.loader.checkIsLoaded(model);
    if (!loaded) throw new Error(`backend ${model} is not currently loaded`);
    let status: Awaited<ReturnType<typeof loaded.client.status>>;
    try {
      status = await loaded.client.status(CALL_MS);
    } catch (error) {
      // The fallback samples the process found under `<model file>.bin`, a key the store (keyed by model id) lacks.
      const key = model.endsWith('.bin') ? model : `${model}.bin`;
      throw new Error(`backend ${model} experienced an error retrieving status info via rpc: ${grpcText(error)}, then failed local node process sample: no grpc backend found for ${key}`);
    }
    // Go's encoding/json of the StatusResponse: fields left at zero are omitted (omitempty).
    const number = STATES[status.state] ?? 0;
    const memory = status.memory && status.memory.total > 0 ? { memory: { total: status.memory.total, breakdown: status.memory.breakdown } } : {};
    return { status: 200, body: { ...(number !== 0 && { state: number }), ...memory } };
  }

  private async shutdown(request: Incoming): Promise<Answer> {
    const model = text(bind(request), 'model');
    if (!model) throw new HttpError(400, 'model is required');
    try {
      await this.loader.shutdownModel(model);
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
      await this.loader.load(this.configured(model));
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
      const loaded = await this.loader.load(this.configured(model));
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

  private enqueue(request: Incoming, op: Op): Answer {
    const id = this.gallery.enqueue(op);
    const host = (request.headers['x-forwarded-host'] as string | undefined) ?? request.headers.host ?? `127.0.0.1:${this.port}`;
    return { status: 200, body: { id, status_url: `http://${host}/backends/jobs/${id}` } };
  }
}

/** The OpenAI `prompt`: a string or a list of them. */
function promptStrings(prompt: unknown): string[] {
  if (typeof prompt === 'string') return [prompt];
  return Array.isArray(prompt) ? prompt.filter((p): p is string => typeof p === 'string') : [];
}
