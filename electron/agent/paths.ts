import envPaths from 'env-paths';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFileAtomic } from '../core/state-file.ts';
import { unreadableFile } from '../core/unreadable-file.ts';
import { HangarError } from '../../shared/errors.ts';

export const DEFAULT_LISTEN = '127.0.0.1:8471';

/**
 * `--home`, then HANGAR_HOME, then the platform data dir (e.g. ~/.local/share/hangar). An empty HANGAR_HOME counts
 * as unset, as the desktop app reads it; an empty `--home` (a variable that was never set) would make a home of the
 * working directory, so it is refused.
 */
export function homeDir(option: string | undefined): string {
  if (option === '') throw new HangarError('invalid-request', '--home is empty: give the directory of a Hangar home');
  return resolve(option ?? (process.env.HANGAR_HOME || envPaths('hangar', { suffix: '' }).data));
}

/** The agent's home, as homeDir finds it: made on the first run, and a directory if it is there at all. */
export async function agentHomeDir(option: string | undefined): Promise<string> {
  const home = homeDir(option);
  const found = await stat(home).catch(() => null);
  if (found && !found.isDirectory()) throw new HangarError('bad-input', `the home ${home} is not a directory`);
  return home;
}

export const tokenFile = (home: string) => join(home, 'state', 'token');
export const agentFile = (home: string) => join(home, 'state', 'agent.json');

/** Where the bundle sits (dist/agent/cli.js): the renderer and the starter gallery are its siblings. */
const distDir = dirname(dirname(fileURLToPath(import.meta.url)));
export const rendererDir = join(distDir, 'renderer');
export const starterGallery = join(distDir, 'backends', 'index.yaml');

export const TOKEN_MIN_LENGTH = 16;

/**
 * The agent's token: --token, else --token-file, else HANGAR_TOKEN, else the home's token file (created random,
 * mode 600, the first time; an existing one has its mode tightened). A file or the environment keeps it out of
 * /proc/PID/cmdline.
 */
export async function agentToken(home: string, given: { token?: string | undefined; tokenFile?: string | undefined }): Promise<string> {
  const explicit = given.token ?? (given.tokenFile !== undefined ? await readTokenFile(given.tokenFile) : process.env.HANGAR_TOKEN);
  const token = explicit ?? (await ensureToken(home));
  if (token.length < TOKEN_MIN_LENGTH) throw new HangarError('bad-input', `the token is too short: use at least ${TOKEN_MIN_LENGTH} characters`);
  return token;
}

async function readTokenFile(file: string): Promise<string> {
  const token = (await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw unreadableFile(`the token file ${file}`, error);
  })).trim();
  if (!token) throw new HangarError('bad-input', `the token file ${file} is empty`);
  return token;
}

async function ensureToken(home: string): Promise<string> {
  const file = tokenFile(home);
  const existing = await readToken(home);
  if (existing) {
    await chmod(file, 0o600);
    return existing;
  }
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const token = randomBytes(24).toString('base64url');
  await writeFileAtomic(file, token + '\n', { mode: 0o600 });
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
