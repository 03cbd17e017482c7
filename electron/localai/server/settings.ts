// Which LocalAI server sits beside this node: set on the agent's command line (fixed for its run), else kept in
// `<state>/localai-server.json` (mode 600, written whole). Its API key never leaves the host: viewers learn only
// that one is kept.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { LocalAiServerRequest } from '../../../shared/api.ts';
import { HangarError } from '../../../shared/errors.ts';
import { withSecretsKept } from '../../core/secrets.ts';
import { readJsonFile, writeFileAtomic } from '../../core/state-file.ts';

export const SERVER_FILE = 'localai-server.json';

const stored = z.object({ url: z.string(), apiKey: z.string().optional(), insecure: z.boolean().optional() });

export const FIXED = 'This agent links the LocalAI server it was started with (--localai-url); another one takes a restart of the agent.';

export class ServerSettings {
  private current: LocalAiServerRequest | null = null;

  constructor(
    private readonly stateDir: string,
    readonly fixed: LocalAiServerRequest | null,
  ) {}

  async load(): Promise<LocalAiServerRequest | null> {
    this.current = this.fixed ?? stored.safeParse(await readJsonFile(join(this.stateDir, SERVER_FILE))).data ?? null;
    return this.current;
  }

  get(): LocalAiServerRequest | null {
    return this.current;
  }

  /**
   * Keeps `next`, on disk before it is used; refused when the command line fixed it. A key left out keeps the one kept
   * only for the same address: a new one is given the key again, or none (the kept key never goes to another host).
   */
  async save(next: LocalAiServerRequest | null): Promise<LocalAiServerRequest | null> {
    if (this.fixed) throw new HangarError('conflict', FIXED);
    const sameServer = next && this.current && sameAddress(next.url, this.current.url);
    const merged = next && withSecretsKept(next, sameServer ? this.current : null, ['apiKey']);
    await mkdir(this.stateDir, { recursive: true }).catch(() => undefined);
    await writeFileAtomic(join(this.stateDir, SERVER_FILE), JSON.stringify(merged, null, 2) + '\n', { mode: 0o600 }).catch((error: Error) => {
      throw new HangarError('failed', error.message);
    });
    this.current = merged;
    return merged;
  }
}

function sameAddress(a: string, b: string): boolean {
  try {
    return new URL(a).href.replace(/\/$/, '') === new URL(b).href.replace(/\/$/, '');
  } catch {
    return false;
  }
}
