// A single LocalAI server's admin API (`local-ai run`; core/http/routes/localai.go): what it lists (GET /system), a
// model's backend status (GET /backend/monitor), stopping a model (POST /backend/shutdown) and loading one (POST
// /backend/load, which answers once the model is loaded), and its version. Nothing else is called.
import * as z from 'zod';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorText, LocalAiHttpError, LocalAiUnreachable, parseJson, parseLocalAiUrl, requestLocalAi, type LocalAiRequest } from '../http.ts';

const text = z.string().max(4096);

/**
 * The most of each list Hangar reads from /system, and of its body: far above what one machine runs (each loaded
 * model is a process), far below what would take the agent's memory and its event loop (100,000 models, 4.4 MB).
 */
export const MAX_LOADED_MODELS = 1024;
export const MAX_BACKENDS = 4096;
const SYSTEM_MAX_BYTES = 1024 * 1024;

/** core/schema/localai.go SystemInformationResponse: backend names (duplicates and all) and the loaded models. */
const systemSchema = z.object({
  backends: z.array(text).max(MAX_BACKENDS).nullish().transform((v) => v ?? []),
  loaded_models: z
    .array(z.object({ id: text, backend: text.optional() }))
    .max(MAX_LOADED_MODELS)
    .nullish()
    .transform((v) => v ?? []),
});

/** The backend's gRPC StatusResponse as LocalAI relays it (`state` a number, omitted when 0; `memory` when it gives one). */
const monitorSchema = z.object({
  state: z.number().int().optional(),
  memory: z.object({ total: z.number().min(0).optional() }).nullish(),
});

const versionSchema = z.object({ version: text });

export interface LoadedModel {
  id: string;
  /** The backend its config names, as written (null: none). */
  backend: string | null;
}

export interface SystemInfo {
  backends: string[];
  loaded: LoadedModel[];
}

const CALL_TIMEOUT_MS = 10_000;
/** A model's memory is a figure to show: not worth waiting long for. */
const MEMORY_TIMEOUT_MS = 5_000;
/** LocalAI's shutdown waits for a busy model up to 30 s, then gives its backend 15 s to exit. */
const SHUTDOWN_TIMEOUT_MS = 60_000;

export class LocalAiServerApi {
  readonly url: string;

  constructor(
    url: string,
    private readonly apiKey: string | null,
  ) {
    this.url = parseLocalAiUrl(url, 'LocalAI server').href.replace(/\/$/, '');
  }

  async system(signal?: AbortSignal): Promise<SystemInfo> {
    const raw = await this.json({ path: '/system', timeoutMs: CALL_TIMEOUT_MS, maxBytes: SYSTEM_MAX_BYTES, ...(signal && { signal }) });
    const count = (list: unknown) => (Array.isArray(list) ? list.length : 0);
    const { loaded_models: loaded, backends } = (raw ?? {}) as { loaded_models?: unknown; backends?: unknown };
    if (count(loaded) > MAX_LOADED_MODELS) throw new LocalAiHttpError(`${this.who} lists ${count(loaded)} loaded models, more than the ${MAX_LOADED_MODELS} Hangar reads`);
    if (count(backends) > MAX_BACKENDS) throw new LocalAiHttpError(`${this.who} lists ${count(backends)} backends, more than the ${MAX_BACKENDS} Hangar reads`);
    const parsed = systemSchema.safeParse(raw);
    if (!parsed.success) throw this.shapeError('/system', parsed.error);
    return { backends: parsed.data.backends, loaded: parsed.data.loaded_models.map((m) => ({ id: m.id, backend: m.backend || null })) };
  }

  /** The model's memory as its backend reports it, in bytes (null when it reports none). */
  async memory(model: string): Promise<number | null> {
    const parsed = monitorSchema.safeParse(await this.json({ path: `/backend/monitor?model=${encodeURIComponent(model)}`, timeoutMs: MEMORY_TIMEOUT_MS, maxBytes: 64 * 1024 }));
    if (!parsed.success) throw this.shapeError('/backend/monitor', parsed.error);
    return parsed.data.memory?.total ?? null;
  }

  /** Stops the model's process; false when it was not loaded (LocalAI answers 404, its message replaced by "Resource not found"). */
  async shutdown(model: string, signal?: AbortSignal): Promise<boolean> {
    const { status, body } = await this.send({ method: 'POST', path: '/backend/shutdown', body: { model }, timeoutMs: SHUTDOWN_TIMEOUT_MS, maxBytes: 64 * 1024, ...(signal && { signal }) });
    if (status === 404) return false;
    this.check('/backend/shutdown', status, body);
    return true;
  }

  /**
   * Loads the model and answers once it is loaded (a start can take minutes: `timeoutMs`). After a failed load LocalAI
   * refuses the model's loads for a while ("load is in cooldown after a recent failure; retry after 10s"): that wait is
   * waited out, within `timeoutMs`.
   */
  async load(model: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { status, body } = await this.send({ method: 'POST', path: '/backend/load', body: { model }, timeoutMs: Math.max(1000, deadline - Date.now()), saidTimeoutMs: timeoutMs, maxBytes: 64 * 1024, ...(signal && { signal }) });
      const cooldown = status === 500 ? cooldownMs(errorText(body)) : null;
      if (cooldown === null || Date.now() + cooldown > deadline) return this.check('/backend/load', status, body);
      await sleep(cooldown, undefined, signal ? { signal } : {}).catch(() => {
        throw new LocalAiHttpError(`${this.who}: cancelled`);
      });
    }
  }

  async version(): Promise<string> {
    const parsed = versionSchema.safeParse(await this.json({ path: '/version', timeoutMs: CALL_TIMEOUT_MS, maxBytes: 64 * 1024 }));
    if (!parsed.success) throw this.shapeError('/version', parsed.error);
    return parsed.data.version.trim();
  }

  private get who(): string {
    return `LocalAI at ${this.url}`;
  }

  private async json(request: LocalAiRequest): Promise<unknown> {
    const { status, body } = await this.send(request);
    this.check(request.path, status, body);
    return parseJson(body, this.who, request.path.split('?')[0]!);
  }

  private send(request: LocalAiRequest): Promise<{ status: number; body: string }> {
    return requestLocalAi(this.url, this.apiKey, request, this.who);
  }

  private check(path: string, status: number, body: string): void {
    const where = path.split('?')[0];
    if (status === 401) throw new LocalAiUnreachable(`${this.who} refused ${this.apiKey ? 'the API key' : 'a request with no API key'} (401): give Hangar one of its API keys`);
    if (status === 403) throw new LocalAiUnreachable(`${this.who} wants an admin's API key (403)`);
    if (status < 200 || status > 299) throw new LocalAiHttpError(`${this.who} answered ${where} with ${status}: ${errorText(body)}`);
  }

  private shapeError(path: string, error: z.ZodError): LocalAiHttpError {
    return new LocalAiHttpError(`${this.who} answered ${path} in a shape Hangar does not know: ${error.issues[0]?.message ?? 'bad shape'}`);
  }
}

/** How long LocalAI says to wait before the next load ("… retry after 1m30s", a Go duration), or null when it says none. */
function cooldownMs(message: string): number | null {
  const duration = /load is in cooldown after a recent failure; retry after ((?:\d+h)?(?:\d+m)?(?:\d+(?:\.\d+)?s)?)/.exec(message)?.[1];
  if (!duration) return null;
  const unit = (suffix: string) => Number(new RegExp(`(\\d+(?:\\.\\d+)?)${suffix}`).exec(duration)?.[1] ?? 0);
  return ((unit('h') * 60 + unit('m(?!s)')) * 60 + unit('s')) * 1000;
}
