// A gallery index on the local disk. Re-read when it changes: fs.watch on its folder (debounced) pushes a reload,
// and every access compares the file's identity, size and mtime as a cheap fallback for missed events.
import { watch, type FSWatcher } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { GALLERY_MAX_BYTES, mebibytes } from './parse.ts';
import type { IndexParser } from './index-parser.ts';
import { failedSnapshot, snapshotFromText, SnapshotSlot, type GallerySource, type Snapshot } from './snapshot.ts';

const debounceMs = 100;

export class FileGallery implements GallerySource {
  readonly location: string;
  private readonly snapshot: SnapshotSlot;
  /** ino:size:mtime of the file when last read; null forces a read. */
  private stamp: string | null = null;
  private running: Promise<void> | null = null;
  private followUp: Promise<void> | null = null;
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    readonly name: string,
    private readonly path: string,
    onChange: (gallery: string) => void,
    private readonly parse?: IndexParser,
  ) {
    this.location = path;
    this.snapshot = new SnapshotSlot(() => onChange(name));
  }

  async current(): Promise<Snapshot> {
    await this.check();
    return this.snapshot.value!;
  }

  last(): Snapshot | null {
    return this.snapshot.value;
  }

  refresh(): Promise<void> {
    this.stamp = null;
    return this.check();
  }

  close(): void {
    this.closed = true;
    this.watcher?.close();
    this.watcher = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** One check at a time; a request during a check gets exactly one more check after it. */
  private check(): Promise<void> {
    if (!this.running) {
      this.running = this.load().finally(() => (this.running = null));
      return this.running;
    }
    this.followUp ??= this.running.then(() => {
      this.followUp = null;
      return this.check();
    });
    return this.followUp;
  }

  private async load(): Promise<void> {
    this.startWatching();
    let text: string;
    try {
      const info = await stat(this.path, { bigint: true });
      const stamp = `${info.ino}:${info.size}:${info.mtimeNs}`;
      if (stamp === this.stamp && this.snapshot.value) return;
      // A FIFO would hold a file thread until a writer comes, a device such as /dev/zero never ends.
      const cause = !info.isFile() ? 'it is not a file' : info.size > BigInt(GALLERY_MAX_BYTES) ? `the file is ${mebibytes(Number(info.size))}, over the ${mebibytes(GALLERY_MAX_BYTES)} limit` : null;
      if (cause !== null) {
        this.stamp = stamp;
        return this.snapshot.set(`failure:${stamp}`, () => failedSnapshot(`gallery "${this.name}": cannot read ${this.path}: ${cause}`));
      }
      text = await readFile(this.path, 'utf8');
      this.stamp = stamp;
    } catch (error) {
      this.stamp = null;
      const code = (error as NodeJS.ErrnoException).code;
      const cause = code === 'ENOENT' ? 'no such file' : (code ?? (error as Error).message);
      return this.snapshot.set(`failure:${cause}`, () => failedSnapshot(`gallery "${this.name}": cannot read ${this.path}: ${cause}`));
    }
    await this.snapshot.set(`text:${text}`, () => snapshotFromText(text, { gallery: this.name, baseDir: dirname(this.path), baseUrl: null }, this.parse));
  }


  /** Watches the folder, not the file, so an editor's write-to-temp-then-rename is seen too. */
  private startWatching(): void {
    if (this.watcher || this.closed) return;
    const file = basename(this.path);
    try {
      this.watcher = watch(dirname(this.path), { persistent: false }, (_event, changed) => {
        if (changed === null || changed.toString() === file) this.schedule();
      });
      this.watcher.on('error', () => this.watcher?.close());
    } catch {
      // No folder to watch (yet): the stat on access still picks up changes.
    }
  }

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.stamp = null;
      void this.check();
    }, debounceMs);
    this.timer.unref();
  }
}
