// The LocalAI builds installed in `<home>/localai/`: the one in use and the one before it, kept for a rollback, in
// `builds.json` (written whole). A build no longer either is removed once the swap that retired it went through.
import { readdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import * as z from 'zod';
import { HangarError } from '../../../shared/errors.ts';
import { readJsonFile, writeJsonFile } from '../../core/state-file.ts';
import type { DownloadedBuild } from './download.ts';

const build = z.object({ tag: z.string(), path: z.string(), sha256: z.string() });
const stored = z.object({ current: build.nullable(), previous: build.nullable() });

export type InstalledBuild = DownloadedBuild;

export class Builds {
  private current: InstalledBuild | null = null;
  private previous: InstalledBuild | null = null;

  constructor(readonly dir: string) {}

  private get file(): string {
    return join(this.dir, 'builds.json');
  }

  async load(): Promise<void> {
    const parsed = stored.safeParse(await readJsonFile(this.file));
    if (!parsed.success) return;
    this.current = parsed.data.current;
    this.previous = parsed.data.previous;
  }

  inUse(): InstalledBuild | null {
    return this.current;
  }

  kept(): InstalledBuild | null {
    return this.previous;
  }

  /** `next` becomes the build in use and the one in use is kept for a rollback. */
  async use(next: InstalledBuild): Promise<void> {
    const before = this.current;
    await this.save(next, before && before.path !== next.path ? before : this.previous);
  }

  /** Both builds as they are now, for `restore` after a swap that failed. */
  snapshot(): { current: InstalledBuild | null; previous: InstalledBuild | null } {
    return { current: this.current, previous: this.previous };
  }

  async restore(snapshot: { current: InstalledBuild | null; previous: InstalledBuild | null }): Promise<void> {
    await this.save(snapshot.current, snapshot.previous);
  }

  /** Removes binaries and interrupted downloads that are neither in use nor kept. */
  async prune(): Promise<void> {
    const keep = new Set([this.current?.path, this.previous?.path].filter(Boolean).map((p) => basename(p!)));
    const names = await readdir(this.dir).catch(() => [] as string[]);
    await Promise.all(names.filter((n) => n.startsWith('local-ai-') && !keep.has(n)).map((n) => rm(join(this.dir, n), { force: true })));
  }

  private async save(current: InstalledBuild | null, previous: InstalledBuild | null): Promise<void> {
    await writeJsonFile(this.file, { current, previous }).catch((error: Error) => {
      throw new HangarError('failed', error.message);
    });
    this.current = current;
    this.previous = previous;
  }
}
