// LocalAI's output (stdout and stderr), kept as its last lines with Hangar's own lines about it between them: bounded
// in count and in line length, the API key blotted out wherever LocalAI itself might print it.
import { LOCALAI_LOG_LINES } from '../../../shared/schemas.ts';

const LINE_MAX = 4096;

export class LogLines {
  private readonly lines: Array<{ text: string; hangar: boolean }> = [];
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
    for (const line of parts) this.add(line, false);
  }

  /** A line of Hangar's own about LocalAI (a start, an exit). */
  note(line: string): void {
    this.add(`hangar: ${line}`, true);
  }

  /** The last lines, LocalAI's and Hangar's. */
  last(count = this.max): string[] {
    return this.lines.slice(-count).map((line) => line.text);
  }

  mark(): number {
    return this.added;
  }

  /** The last `count` lines LocalAI itself wrote after `mark` (those still kept): what a failed start said. */
  since(mark: number, count: number): string[] {
    const after = this.lines.slice(Math.max(0, this.lines.length - (this.added - mark)));
    return after.filter((line) => !line.hangar).slice(-count).map((line) => line.text);
  }

  private add(line: string, hangar: boolean): void {
    const secret = this.secret();
    const clean = line.replace(/\r$/, '').slice(0, LINE_MAX);
    this.lines.push({ text: secret ? clean.split(secret).join('***') : clean, hangar });
    this.added++;
    if (this.lines.length > this.max) this.lines.splice(0, this.lines.length - this.max);
  }
}
