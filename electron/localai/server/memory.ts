// What each loaded model's backend reports to LocalAI as its memory (GET /backend/monitor): asked a few models at a
// time, one round at a time, so a LocalAI listing many models, or slow to answer, costs the agent a few sockets.
import type { LocalAiServerApi } from './api.ts';

const AT_ONCE = 4;

export class MemorySampler {
  private readonly bytes = new Map<string, number>();
  private running: Promise<void> | null = null;

  constructor(private readonly api: LocalAiServerApi) {}

  of(model: string): number | null {
    return this.bytes.get(model) ?? null;
  }

  /** Asks for these models' figures, unless a round is under way (the next poll asks again). */
  sample(models: string[]): void {
    const listed = new Set(models);
    for (const model of this.bytes.keys()) if (!listed.has(model)) this.bytes.delete(model);
    this.running ??= this.round(models).finally(() => (this.running = null));
  }

  private async round(models: string[]): Promise<void> {
    for (let i = 0; i < models.length; i += AT_ONCE) {
      await Promise.all(models.slice(i, i + AT_ONCE).map(async (model) => {
        const bytes = await this.api.memory(model).catch(() => null);
        if (bytes === null) this.bytes.delete(model);
        else this.bytes.set(model, bytes);
      }));
    }
  }
}
