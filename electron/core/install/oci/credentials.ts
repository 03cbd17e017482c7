// Registry credentials from Docker's config.json (`auths.<host>.auth` = base64 "user:pass").
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface Credentials {
  username: string;
  password: string;
}

export type CredentialLookup = (registry: string) => Promise<Credentials | null>;

const DOCKER_HUB_ALIASES = ['docker.io', 'index.docker.io', 'registry-1.docker.io'];

/** Where Docker keeps its config: an explicit path, else $DOCKER_CONFIG/config.json, else ~/.docker/config.json. */
export function dockerConfigPath(explicit?: string): string {
  if (explicit) return explicit;
  const dir = process.env['DOCKER_CONFIG'];
  return join(dir ? dir : join(homedir(), '.docker'), 'config.json');
}

/** A lookup that reads the config file on each call, so a `docker login` made meanwhile is honoured. */
export function dockerConfigCredentials(configPath?: string): CredentialLookup {
  return async (registry) => {
    let text: string;
    try {
      text = await readFile(dockerConfigPath(configPath), 'utf8');
    } catch {
      return null;
    }
    return credentialsFor(registry, parseAuths(text));
  };
}

function parseAuths(text: string): Record<string, unknown> {
  try {
    const config = JSON.parse(text) as { auths?: unknown };
    return typeof config.auths === 'object' && config.auths !== null ? (config.auths as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function credentialsFor(registry: string, auths: Record<string, unknown>): Credentials | null {
  const wanted = DOCKER_HUB_ALIASES.includes(registry) ? DOCKER_HUB_ALIASES : [registry];
  for (const [key, entry] of Object.entries(auths)) {
    if (!wanted.includes(hostOfKey(key))) continue;
    const credentials = decodeEntry(entry);
    if (credentials) return credentials;
  }
  return null;
}

/** Keys are hosts, sometimes written as URLs (`https://index.docker.io/v1/`). */
function hostOfKey(key: string): string {
  return key.replace(/^[a-z]+:\/\//i, '').replace(/\/.*$/, '');
}

function decodeEntry(entry: unknown): Credentials | null {
  if (typeof entry !== 'object' || entry === null) return null;
  const { auth, username, password } = entry as Record<string, unknown>;
  if (typeof auth === 'string' && auth) {
    const decoded = Buffer.from(auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  if (typeof username === 'string' && typeof password === 'string') return { username, password };
  return null;
}
