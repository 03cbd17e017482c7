// The LocalAI frontend's admin HTTP API, read-only: the registered workers (GET /api/nodes, core/http/routes/nodes.go)
// and the backend galleries it passes to them (GET /backends/galleries). The API key goes as LocalAI reads it,
// `Authorization: Bearer KEY`, and never into a message.
import { z } from 'zod';

const text = z.string().max(4096);
const bytes = z.number().min(0).optional().transform((v) => v ?? 0);
const optionalText = text.optional().transform((v) => v ?? '');

/** One row of GET /api/nodes (NodeWithExtras: BackendNode plus model_count, in_flight_count, labels). */
export const frontendNodeSchema = z.object({
  id: z.string().min(1).max(64),
  name: text,
  node_type: optionalText,
  address: optionalText,
  http_address: optionalText,
  status: text,
  total_vram: bytes,
  available_vram: bytes,
  total_ram: bytes,
  available_ram: bytes,
  gpu_vendor: optionalText,
  capability: optionalText,
  last_heartbeat: optionalText,
  model_count: z.number().int().min(0).optional().transform((v) => v ?? 0),
  labels: z.record(text, text).nullish().transform((v) => v ?? {}),
});
export type FrontendNode = z.infer<typeof frontendNodeSchema>;

const nodesSchema = z.array(frontendNodeSchema).max(10_000);

/** config.Gallery as the frontend marshals it (and passes it to workers). */
const gallerySchema = z.object({ url: text, name: text }).loose();
export type LocalAiGallery = z.infer<typeof gallerySchema>;
const galleriesSchema = z.array(gallerySchema).max(64).nullable().transform((v) => v ?? []);

const REQUEST_TIMEOUT_MS = 10_000;
const RESPONSE_MAX_BYTES = 8 * 1024 * 1024;

export class FrontendError extends Error {}

export class FrontendClient {
  private readonly base: URL;

  constructor(
    url: string,
    private readonly apiKey: string | null,
  ) {
    this.base = parseFrontendUrl(url);
  }

  get url(): string {
    return this.base.href.replace(/\/$/, '');
  }

  async nodes(): Promise<FrontendNode[]> {
    return this.get('/api/nodes', nodesSchema);
  }

  /** The galleries, and their JSON exactly as the frontend sent it: workers get the same text. */
  async galleries(): Promise<{ galleries: LocalAiGallery[]; json: string }> {
    const { value, body } = await this.getWithBody('/backends/galleries', galleriesSchema);
    return { galleries: value, json: body.trim() === 'null' ? '[]' : body.trim() };
  }

  private async get<S extends z.ZodType>(path: string, schema: S): Promise<z.infer<S>> {
    return (await this.getWithBody(path, schema)).value;
  }

  private async getWithBody<S extends z.ZodType>(path: string, schema: S): Promise<{ value: z.infer<S>; body: string }> {
    const url = new URL(path.slice(1), `${this.url}/`);
    let response: Response;
    try {
      response = await fetch(url, {
        headers: { accept: 'application/json', ...(this.apiKey && { authorization: `Bearer ${this.apiKey}` }) },
        redirect: 'error',
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw new FrontendError(`cannot reach the LocalAI frontend at ${this.url}: ${describeFetchError(error)}`);
    }
    const body = await readCapped(response);
    if (response.status === 401) throw new FrontendError(`the LocalAI frontend at ${this.url} refused the API key (401): set an admin's key`);
    if (response.status === 403) throw new FrontendError(`the LocalAI frontend at ${this.url} wants an admin's API key (403)`);
    if (response.status === 503) throw new FrontendError(`the LocalAI frontend at ${this.url} is not in distributed mode (503: ${errorText(body)})`);
    if (!response.ok) throw new FrontendError(`the LocalAI frontend at ${this.url} answered ${path} with ${response.status}: ${errorText(body)}`);
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      throw new FrontendError(`the LocalAI frontend at ${this.url} answered ${path} with something that is not JSON`);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw new FrontendError(`the LocalAI frontend at ${this.url} answered ${path} in a shape Hangar does not know: ${parsed.error.issues[0]?.message ?? 'bad shape'}`);
    return { value: parsed.data, body };
  }
}

export function parseFrontendUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new FrontendError(`a LocalAI frontend address looks like http://HOST:8080, got "${text.slice(0, 200)}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new FrontendError(`a LocalAI frontend address is http:// or https://, got "${text.slice(0, 200)}"`);
  if (url.username || url.password) throw new FrontendError('put the LocalAI API key in its file, not in the address');
  return url;
}

async function readCapped(response: Response): Promise<string> {
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
      throw new FrontendError(`the LocalAI frontend sent more than ${RESPONSE_MAX_BYTES / 1024 / 1024} MiB`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** LocalAI's error bodies: `{"error":{"message":…}}` or `{"error":"…"}`. */
function errorText(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: unknown };
    const error = parsed.error;
    if (typeof error === 'string') return error.slice(0, 200);
    if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') return (error as { message: string }).message.slice(0, 200);
  } catch {
    // not JSON: said below as it is
  }
  return body.replace(/\s+/g, ' ').slice(0, 200) || 'no body';
}

function describeFetchError(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code === 'ECONNREFUSED') return 'connection refused';
  if ((error as Error).name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  return cause?.message ?? (error as Error).message;
}
