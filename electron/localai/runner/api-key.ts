// The API key of the LocalAI Hangar runs: made once, kept in `<home>/state/localai-api-key` (mode 600), and given to
// LocalAI only in its environment (LOCALAI_API_KEY): a command line can be read by every user in `ps`.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../core/state-file.ts';

export const API_KEY_FILE = 'localai-api-key';

export async function localAiApiKey(stateDir: string): Promise<string> {
  const path = join(stateDir, API_KEY_FILE);
  const kept = (await readFile(path, 'utf8').catch(() => '')).trim();
  if (kept) {
    await chmod(path, 0o600);
    return kept;
  }
  const key = `sk-hangar-${randomBytes(24).toString('hex')}`;
  await mkdir(stateDir, { recursive: true });
  await writeFileAtomic(path, key + '\n', { mode: 0o600 });
  return key;
}
