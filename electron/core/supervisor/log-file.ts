// Each model's log on disk, `<logsDir>/<model>.log`, kept across respawns and crashes: one line per output line,
// "<ISO time> <stream> <text>", a separator line on every start, rotated to `<model>.log.1` past maxBytes (one
// older file kept). Writes are batched and never awaited by the backend's pipe: a failed write (a full disk) is
// reported once through onFailure and the lines are dropped, while the backend keeps running.
import { appendFile, mkdir, open, readFile, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { LogLine } from '../../../shared/index.ts';

export const LOG_MAX_BYTES = 10 * 1024 * 1024;
const SEPARATOR = '-----';
/** How much of the files' end a tail reads: enough for `lines` ordinary lines without reading 10 MiB. */
const TAIL_BYTES_PER_LINE = 512;

export class ModelLog {
  readonly path: string;
  private buffer = '';
  private size: number | null = null;
  private flushing: Promise<void> | null = null;
  private failed = false;

  constructor(
    private readonly dir: string,
    private readonly model: string,
    private readonly maxBytes: number,
    private readonly onFailure: (error: Error) => void,
  ) {
    this.path = join(dir, `${fileName(model)}.log`);
  }

  write(line: LogLine): void {
    this.append(`${line.at} ${line.stream} ${line.text}\n`);
  }

  /** The line that opens every start of the model's process in the file. */
  separator(text: string, at = new Date().toISOString()): void {
    this.append(`${at} ${SEPARATOR} ${text} ${SEPARATOR}\n`);
  }

  /** Resolves once everything written so far reached the file (or failed). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  /** The last `count` lines of the model's log (the older file first), parsed back into LogLines. */
  async tail(count: number): Promise<LogLine[]> {
    await this.flush();
    const budget = count * TAIL_BYTES_PER_LINE;
    const newest = await readEnd(this.path, budget);
    const older = newest.whole ? await readEnd(`${this.path}.1`, budget - newest.bytes) : { text: '', whole: true, bytes: 0 };
    const lines = [...splitLines(older.text, older.whole), ...splitLines(newest.text, newest.whole)];
    return lines.slice(-count).map((text) => parseLine(this.model, text));
  }

  private append(text: string): void {
    if (this.failed) return;
    this.buffer += text;
    this.flushing ??= this.drain();
  }

  private async drain(): Promise<void> {
    try {
      await mkdir(this.dir, { recursive: true });
      this.size ??= await stat(this.path).then((s) => s.size, () => 0);
      while (this.buffer) {
        const chunk = this.buffer;
        this.buffer = '';
        if (this.size > 0 && this.size + Buffer.byteLength(chunk) > this.maxBytes) {
          await rename(this.path, `${this.path}.1`);
          this.size = 0;
        }
        await appendFile(this.path, chunk);
        this.size += Buffer.byteLength(chunk);
      }
    } catch (error) {
      this.failed = true;
      this.buffer = '';
      this.onFailure(error as Error);
    } finally {
      this.flushing = null;
    }
  }
}

/** A model name may hold ':' (not allowed in Windows file names). */
function fileName(model: string): string {
  return model.replaceAll(':', '%3A');
}

/** The last `bytes` of a file; `whole` when that is the entire file (a missing file is an empty whole). */
async function readEnd(path: string, bytes: number): Promise<{ text: string; whole: boolean; bytes: number }> {
  try {
    const size = (await stat(path)).size;
    if (size <= bytes) return { text: await readFile(path, 'utf8'), whole: true, bytes: size };
    if (bytes <= 0) return { text: '', whole: false, bytes: 0 };
    const file = await open(path, 'r');
    try {
      const buffer = Buffer.alloc(bytes);
      await file.read(buffer, 0, bytes, size - bytes);
      return { text: buffer.toString('utf8'), whole: false, bytes };
    } finally {
      await file.close();
    }
  } catch {
    return { text: '', whole: true, bytes: 0 };
  }
}

/** Whole lines of `text`; the first is cut when `fromStart` is false (it may be the end of a longer line). */
function splitLines(text: string, fromStart: boolean): string[] {
  const lines = text.split('\n').filter((l, i, all) => l !== '' || i < all.length - 1);
  return fromStart ? lines : lines.slice(1);
}

function parseLine(model: string, text: string): LogLine {
  const match = /^(\S+) (stdout|stderr|-----) (.*)$/.exec(text);
  if (!match) return { model, stream: 'stderr', text, at: '' };
  const [, at, stream, rest] = match as unknown as [string, string, string, string];
  if (stream === SEPARATOR) return { model, stream: 'stderr', text: `${SEPARATOR} ${rest}`, at };
  return { model, stream: stream as LogLine['stream'], text: rest, at };
}
