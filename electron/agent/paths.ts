import envPaths from 'env-paths';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DEFAULT_LISTEN = '127.0.0.1:8471';

/** `--home`, then HANGAR_HOME, then the platform data dir (e.g. ~/.local/share/hangar). */
export function homeDir(option: string | undefined): string {
  return resolve(option ?? process.env.HANGAR_HOME ?? envPaths('hangar', { suffix: '' }).data);
}

export const tokenFile = (home: string) => join(home, 'state', 'token');
export const agentFile = (home: string) => join(home, 'state', 'agent.json');

/** Where the bundle sits (dist/agent/cli.js): the renderer and the starter gallery are its siblings. */
const distDir = dirname(dirname(fileURLToPath(import.meta.url)));
export const rendererDir = join(distDir, 'renderer');
export const starterGallery = join(distDir, 'backends', 'index.yaml');

/** Reads the home's token, creating a random one (mode 600) the first time. */
export async function ensureToken(home: string): Promise<string> {
  const file = tokenFile(home);
  const existing = await readToken(home);
  if (existing) return existing;
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const token = randomBytes(24).toString('base64url');
  await writeFile(file, token + '\n', { mode: 0o600 });
  return token;
}

export async function readToken(home: string): Promise<string | null> {
  try {
    return (await readFile(tokenFile(home), 'utf8')).trim() || null;
  } catch {
    return null;
  }
}

export async function readAgentUrl(home: string): Promise<string | null> {
  try {
    const { url } = JSON.parse(await readFile(agentFile(home), 'utf8')) as { url?: unknown };
    return typeof url === 'string' ? url : null;
  } catch {
    return null;
  }
}
