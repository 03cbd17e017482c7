// A JSON file in the home rewritten after every change, whole or not at all (see state-file.ts); writes are
// coalesced, so a burst of changes costs one write and the newest state wins. Nobody waits on these writes, so a
// write that fails is reported here, as a process warning in the host's log: once, until a write succeeds again.
import { readJsonFile, warnWriteFailed, writeJsonFile } from './state-file.ts';

export class CoalescedFile<T> {
  private pending: T | null = null;
  private writing: Promise<void> | null = null;
  private failure: Error | null = null;

  constructor(readonly path: string) {}

  /** The parsed file, or null when it is missing or not JSON. */
  read(): Promise<unknown> {
    return readJsonFile(this.path);
  }

  save(value: T): void {
    this.pending = value;
    this.writing ??= this.drain();
  }

  /** Resolves when everything saved so far is on disk; rejects if the last write failed. */
  async flush(): Promise<void> {
    await this.writing;
    if (this.failure) throw this.failure;
  }

  private async drain(): Promise<void> {
    while (this.pending !== null) {
      const value = this.pending;
      this.pending = null;
      try {
        await writeJsonFile(this.path, value);
        this.failure = null;
      } catch (error) {
        if (this.failure === null) warnWriteFailed(error as Error);
        this.failure = error as Error;
      }
    }
    this.writing = null;
  }
}
