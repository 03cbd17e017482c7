// The LocalAI frontend's admin HTTP API, read-only: the registered workers (GET /api/nodes, core/http/routes/nodes.go)
// and the backend galleries it passes to them (GET /backends/galleries). The API key goes as LocalAI reads it,
// `Authorization: Bearer KEY`, and never into a message.
import * as z from 'zod';
import { errorText, LocalAiHttpError, parseJson, parseLocalAiUrl, requestLocalAi } from './http.ts';

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

export class FrontendClient {
  private readonly base: URL;

  constructor(
    url: string,
    private readonly apiKey: string | null,
  ) {
    this.base = parseLocalAiUrl(url, 'LocalAI frontend');
  }

  get url(): string {
    return this.base.href.replace(/\/$/, '');
  }

  async nodes(): Promise<FrontendNode[]> {
    return (await this.get('/api/nodes', nodesSchema)).value;
  }

  /** The galleries, and their JSON exactly as the frontend sent it: workers get the same text. */
  async galleries(): Promise<{ galleries: LocalAiGallery[]; json: string }> {
    const { value, body } = await this.get('/backends/galleries', galleriesSchema);
    return { galleries: value, json: body.trim() === 'null' ? '[]' : body.trim() };
  }

  private async get<S extends z.ZodType>(path: string, schema: S): Promise<{ value: z.infer<S>; body: string }> {
    const who = `the LocalAI frontend at ${this.url}`;
    const { status, body } = await requestLocalAi(this.url, this.apiKey, { path, timeoutMs: REQUEST_TIMEOUT_MS }, who);
    if (status === 401) throw new LocalAiHttpError(`${who} refused the API key (401): set an admin's key`);
    if (status === 403) throw new LocalAiHttpError(`${who} wants an admin's API key (403)`);
    if (status === 503) throw new LocalAiHttpError(`${who} is not in distributed mode (503: ${errorText(body)})`);
    if (status < 200 || status > 299) throw new LocalAiHttpError(`${who} answered ${path} with ${status}: ${errorText(body)}`);
    const parsed = schema.safeParse(parseJson(body, who, path));
    if (!parsed.success) throw new LocalAiHttpError(`${who} answered ${path} in a shape Hangar does not know: ${parsed.error.issues[0]?.message ?? 'bad shape'}`);
    return { value: parsed.data, body };
  }
}
