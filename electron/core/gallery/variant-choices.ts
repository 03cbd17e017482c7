// Which build of each meta backend the user picked on this node, kept in `<home>/state/variants.json`.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

export class VariantChoices {
  private choices: Map<string, string> | null = null;

  constructor(private readonly file: string) {}

  async get(meta: string): Promise<string | null> {
    return (await this.load()).get(meta.toLowerCase()) ?? null;
  }

  async all(): Promise<Map<string, string>> {
    return new Map(await this.load());
  }

  /** `capability` null forgets the pick, so the automatic choice applies again. */
  async set(meta: string, capability: string | null): Promise<void> {
    const choices = await this.load();
    if (capability === null) choices.delete(meta.toLowerCase());
    else choices.set(meta.toLowerCase(), capability);
    await mkdir(dirname(this.file), { recursive: true });
    await writeFile(`${this.file}.tmp`, JSON.stringify(Object.fromEntries(choices), null, 2) + '\n');
    await rename(`${this.file}.tmp`, this.file);
  }

  private async load(): Promise<Map<string, string>> {
    if (this.choices) return this.choices;
    let parsed: unknown = {};
    try {
      parsed = JSON.parse(await readFile(this.file, 'utf8'));
    } catch {
      // A missing or unreadable file means no picks: every meta resolves automatically.
    }
    const entries = parsed && typeof parsed === 'object' ? Object.entries(parsed) : [];
    this.choices = new Map(entries.filter((e): e is [string, string] => typeof e[1] === 'string'));
    return this.choices;
  }
}
