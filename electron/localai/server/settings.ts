// Which LocalAI server sits beside this node: set on the agent's command line (fixed for its run), else kept in
// `<state>/localai-server.json` (mode 600, written whole). Its API key never leaves the host: viewers learn only
// that one is kept.
import { join } from 'node:path';
import * as z from 'zod';
import type { LocalAiServerRequest } from '../../../shared/api.ts';
import { KeptSetting, ownerFile } from '../../core/kept-setting.ts';

export const SERVER_FILE = 'localai-server.json';

const stored = z.object({ url: z.string(), apiKey: z.string().optional(), insecure: z.boolean().optional() });

const FIXED = 'This agent links the LocalAI server it was started with (--localai-url); another one takes a restart of the agent.';

/** A key left out keeps the one kept only for the same address: the kept key never goes to another host. */
export function serverSetting(stateDir: string, fixed: LocalAiServerRequest | null): KeptSetting<LocalAiServerRequest> {
  return new KeptSetting({
    place: ownerFile(join(stateDir, SERVER_FILE), stored),
    fixed: fixed && { value: fixed, reason: FIXED },
    secrets: ['apiKey'],
    keepsSecrets: (next, kept) => sameAddress(next.url, kept.url),
  });
}

function sameAddress(a: string, b: string): boolean {
  try {
    return new URL(a).href.replace(/\/$/, '') === new URL(b).href.replace(/\/$/, '');
  } catch {
    return false;
  }
}
