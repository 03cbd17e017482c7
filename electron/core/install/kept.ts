// Rollback trees whose backend is gone. LocalAI deletes a backend with `rm -rf backends/X` and knows nothing of
// `.hangar/previous/X`, which would then stay forever. Such a tree is kept KEPT_DAYS from the moment Hangar first
// finds its backend gone (kept in `kept.json` beside it, so every Hangar sharing the directory agrees), then removed.
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { backendName } from '../../../shared/schemas.ts';
import { readJsonFile, writeJsonFile } from '../state-file.ts';
import { parseMetadata, readMetadataText, type BackendMetadata } from './metadata.ts';

export const KEPT_DAYS = 7;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface KeptTree {
  name: string;
  dir: string;
  metadata: BackendMetadata | null;
  /** When Hangar first found the backend gone (ISO time). */
  since: string;
  /** When the tree is removed (ISO time). */
  expiresAt: string;
  /** Bytes of the files in it. */
  bytes: number;
}

export class KeptTrees {
  /** Sizes by tree, valid while the tree's directory is the same one (a kept tree is never written to). */
  private readonly sizes = new Map<string, { stamp: string; bytes: number }>();

  constructor(
    private readonly previousRoot: string,
    private readonly recordFile: string,
    private readonly isLive: (name: string) => Promise<boolean>,
  ) {}

  /** The kept trees now; those past their time are handed to `remove` and left out. */
  async list(now: number, remove: (name: string, dir: string) => Promise<void>): Promise<KeptTree[]> {
    const names = (await readdir(this.previousRoot).catch(() => [] as string[])).filter((n) => backendName.safeParse(n).success);
    const orphaned = (await Promise.all(names.map(async (n) => ((await this.isLive(n)) ? null : n)))).filter((n): n is string => n !== null);
    const record = await this.readRecord();
    const next: Record<string, string> = {};
    const kept: KeptTree[] = [];
    for (const name of orphaned.sort()) {
      const since = Date.parse(record[name] ?? '') || now;
      const dir = join(this.previousRoot, name);
      if (now - since >= KEPT_DAYS * DAY_MS) {
        await remove(name, dir).catch(() => undefined); // a second listing may have removed it first
        continue;
      }
      next[name] = new Date(since).toISOString();
      kept.push({ name, dir, metadata: await readKeptMetadata(dir, name), since: next[name], expiresAt: new Date(since + KEPT_DAYS * DAY_MS).toISOString(), bytes: await this.size(dir) });
    }
    // A record that cannot be written (a full disk) only keeps a tree longer: its time starts again next time.
    if (JSON.stringify(next) !== JSON.stringify(record)) await writeJsonFile(this.recordFile, next).catch(() => undefined);
    return kept;
  }

  /** When each kept tree was first found; none yet, or unreadable: every kept tree starts its time again. */
  private async readRecord(): Promise<Record<string, string>> {
    const parsed = await readJsonFile(this.recordFile);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'));
  }

  private async size(dir: string): Promise<number> {
    const top = await lstat(dir, { bigint: true });
    const stamp = `${top.ino}.${top.ctimeNs}`;
    const cached = this.sizes.get(dir);
    if (cached?.stamp === stamp) return cached.bytes;
    const bytes = await treeBytes(dir);
    this.sizes.set(dir, { stamp, bytes });
    return bytes;
  }
}

async function treeBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await treeBytes(path);
    else if (entry.isFile()) total += (await lstat(path)).size;
  }
  return total;
}

async function readKeptMetadata(dir: string, name: string): Promise<BackendMetadata | null> {
  try {
    return parseMetadata(await readMetadataText(dir), name, '');
  } catch {
    return null;
  }
}
