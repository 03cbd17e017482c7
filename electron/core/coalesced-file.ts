// A JSON file in the home rewritten after every change: atomically (tmp + rename), so a reader or a crash sees the
// old file or the new one; writes are coalesced, so a burst of changes costs one write and the newest state wins.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

let writes = 0;

export class CoalescedFile<T> {
  private pending: T | null = null;
  private writing: Promise<void> | null = null;
  private failure: Error | null = null;

  constructor(readonly path: string) {}

  /** The parsed file, or null when it is missing or not JSON. */
  async read(): Promise<unknown> {
    try {
      return JSON.parse(await readFile(this.path, 'utf8')) as unknown;
    } catch {
      return null;
    }
  }

  save(value: T): void {
    this.pending = value;
    this.writing ??= this.drain();
  }

  /** Resolves when everything saved so far is on disk; rejects if a write failed. */
  async flush(): Promise<void> {
    await this.writing;
    if (this.failure) throw this.failure;
  }

  private async drain(): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true }).catch(() => undefined);
    while (this.pending !== null) {
      const value = this.pending;
      this.pending = null;
      const tmp = `${this.path}.${process.pid}.${++writes}.tmp`;
      try {
        await writeFile(tmp, JSON.stringify(value, null, 2) + '\n');
        await rename(tmp, this.path);
        this.failure = null;
      } catch (err) {
        this.failure = err as Error;
      }
    }
    this.writing = null;
  }
}
