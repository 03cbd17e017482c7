import type { LogLine } from '../../../shared/index.ts';

/** The last `capacity` log lines of one process; older lines fall off. */
export class LogRing {
  private readonly lines: LogLine[] = [];
  private next = 0;

  constructor(private readonly capacity = 1000) {}

  push(line: LogLine): void {
    if (this.lines.length < this.capacity) this.lines.push(line);
    else this.lines[this.next] = line;
    this.next = (this.next + 1) % this.capacity;
  }

  /** Oldest first. */
  toArray(): LogLine[] {
    if (this.lines.length < this.capacity) return [...this.lines];
    return [...this.lines.slice(this.next), ...this.lines.slice(0, this.next)];
  }
}
