// The installed backends LocalAI's gallery marks for upgrade once LocalAI's version changed (an upgrade, a rollback, a
// first start on another binary): a new LocalAI often needs a new build of the same backend tag, and a stale build
// fails its loads with an error that names neither (LocalAI #10720). Kept in `<home>/state/localai-backend-marks.json`
// with the version they were checked for, so a restarted agent neither checks again nor forgets them; a backend's mark
// goes once it is upgraded or deleted.
import * as z from 'zod';
import type { LocalAiMarkedBackend } from '../../../shared/types.ts';
import { readJsonFile, writeJsonFile } from '../../core/state-file.ts';

/**
 * Which installed backends LocalAI's gallery marks for upgrade now, read with fresh image digests; `unread` says what
 * could not be read (a gallery), when anything could not.
 */
export type MarkCheck = () => Promise<{ marked: Array<{ name: string; why: string }>; unread: string | null }>;

const stored = z.object({
  version: z.string().nullable(),
  marked: z.array(z.object({ name: z.string(), why: z.string(), since: z.string() })),
});

export class BackendMarks {
  /** The LocalAI version the marks were checked for. */
  private version: string | null = null;
  private marked: LocalAiMarkedBackend[] = [];

  constructor(private readonly file: string) {}

  async load(): Promise<void> {
    const read = stored.safeParse(await readJsonFile(this.file));
    if (read.success) ({ version: this.version, marked: this.marked } = read.data);
  }

  list(): LocalAiMarkedBackend[] {
    return this.marked.map((m) => ({ ...m }));
  }

  /**
   * LocalAI runs `version`: unless the marks were checked for it, the installed backends are checked again. A check
   * that could not read everything shows what it found, and is made again at LocalAI's next start.
   */
  async ran(version: string, check: MarkCheck): Promise<string | null> {
    if (version === this.version) return null;
    const { marked, unread } = await check();
    if (unread === null) this.version = version;
    this.marked = marked.map((m) => ({ ...m, since: version }));
    await this.save();
    const said = [
      this.marked.length > 0 && `its gallery marks ${this.marked.map((m) => `${m.name} (${m.why})`).join(', ')} for upgrade; upgrade them (hangar upgrade --all, or Settings → LocalAI → Upgrade all)`,
      unread !== null && `its backends' upgrade check could not read ${unread}: it is made again at LocalAI's next start`,
    ].filter(Boolean);
    return said.length > 0 ? `LocalAI ${version}: ${said.join('; ')}` : null;
  }

  /** `name` is no longer marked (upgraded, deleted, or found current). */
  async drop(names: (name: string) => boolean): Promise<void> {
    const kept = this.marked.filter((m) => !names(m.name));
    if (kept.length === this.marked.length) return;
    this.marked = kept;
    await this.save();
  }

  /** What a failed load of a model on one of `backends` (its name as LocalAI gave it, and the directory it runs) adds. */
  loadNote(...backends: Array<string | null | undefined>): string | null {
    const mark = this.marked.find((m) => backends.includes(m.name));
    if (!mark) return null;
    const what = mark.why === 'new build' ? 'a new build' : `a new version (${mark.why})`;
    return `its backend ${mark.name} has ${what} since LocalAI ${mark.since}: upgrade it (hangar upgrade ${mark.name}, or Settings → LocalAI → Upgrade all)`;
  }

  private async save(): Promise<void> {
    await writeJsonFile(this.file, { version: this.version, marked: this.marked });
  }
}
