// Which build of each meta backend the user picked on this node, kept in `<home>/state/variants.json`.
import { HangarError } from '../../../shared/errors.ts';
import { KeyedLock } from '../locks.ts';
import { readJsonFile, writeJsonFile } from '../state-file.ts';

export class VariantChoices {
  private choices: Map<string, string> | null = null;
  /** Picks are written one after another, each over the one before it. */
  private readonly writing = new KeyedLock();

  constructor(private readonly file: string) {}

  async get(meta: string): Promise<string | null> {
    return (await this.load()).get(meta.toLowerCase()) ?? null;
  }

  /** Every pick; the same map until a pick changes. */
  async all(): Promise<ReadonlyMap<string, string>> {
    return this.load();
  }

  /** `capability` null forgets the pick, so the automatic choice applies again. A pick that cannot be written is refused. */
  set(meta: string, capability: string | null): Promise<void> {
    return this.writing.run(this.file, async () => {
      const next = new Map(await this.load());
      if (capability === null) next.delete(meta.toLowerCase());
      else next.set(meta.toLowerCase(), capability);
      await writeJsonFile(this.file, Object.fromEntries(next)).catch((error: Error) => {
        throw new HangarError('failed', `the build of ${meta} was not changed: ${error.message}`);
      });
      this.choices = next;
    });
  }

  private async load(): Promise<Map<string, string>> {
    if (this.choices) return this.choices;
    // A missing or unreadable file means no picks: every meta resolves automatically.
    const parsed = await readJsonFile(this.file);
    const entries = parsed && typeof parsed === 'object' ? Object.entries(parsed) : [];
    this.choices = new Map(entries.filter((e): e is [string, string] => typeof e[1] === 'string'));
    return this.choices;
  }
}
