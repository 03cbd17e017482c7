// LocalAI's output (stdout and stderr), kept as its last lines: bounded in count and in line length, the API key
// blotted out wherever LocalAI itself might print it.
import { LOCALAI_LOG_LINES } from '../../../shared/schemas.ts';

const LINE_MAX = 4096;

export class LogLines {
  private readonly lines: string[] = [];
  /** How many lines were ever added: a mark for `since`. */
  private added = 0;
  private partial = new Map<string, string>();

  constructor(
    private readonly secret: () => string | null,
    private readonly max = LOCALAI_LOG_LINES,
  ) {}

  /** A chunk of one stream's output; a line cut between chunks is joined. */
  write(stream: 'stdout' | 'stderr', chunk: Buffer | string): void {
    const text = (this.partial.get(stream) ?? '') + chunk.toString();
    const parts = text.split('\n');
    this.partial.set(stream, parts.pop()!.slice(0, LINE_MAX));
    for (const line of parts) this.add(line);
  }

  /** A line of Hangar's own about LocalAI (a start, an exit). */
  note(line: string): void {
    this.add(`hangar: ${line}`);
  }

  last(count = this.max): string[] {
    return this.lines.slice(-count);
  }

  mark(): number {
    return this.added;
  }

  /** The last `count` lines added after `mark` (those still kept). */
  since(mark: number, count: number): string[] {
    return this.lines.slice(Math.max(0, this.lines.length - (this.added - mark))).slice(-count);
  }

  private add(line: string): void {
    const secret = this.secret();
    const clean = line.replace(/\r$/, '').slice(0, LINE_MAX);
    this.lines.push(secret ? clean.split(secret).join('***') : clean);
    this.added++;
    if (this.lines.length > this.max) this.lines.splice(0, this.lines.length - this.max);
  }
}
