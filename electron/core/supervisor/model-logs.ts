// Each model's log across its processes: lines go to the running process's ring, the model's file and the 'log' event.
import type { LogLine } from '../../../shared/index.ts';
import type { LogRing } from './log-ring.ts';
import { ModelLog } from './log-file.ts';
import type { Proc, ProcessRecords, SupervisorEvents } from './process-records.ts';

const LOG_TAIL_LINES = 1000;

export class ModelLogs {
  private readonly files = new Map<string, ModelLog>();

  constructor(
    private readonly records: ProcessRecords,
    private readonly events: SupervisorEvents,
    private readonly dir: string,
    private readonly maxBytes: number,
  ) {}

  /** The model's log file, opened on first use. */
  of(model: string): ModelLog {
    let log = this.files.get(model);
    if (!log) {
      log = new ModelLog(this.dir, model, this.maxBytes, (error) => {
        const text = `[hangar] cannot write the log file of ${model} (${error.message}); its output is no longer kept on disk`;
        const line: LogLine = { model, stream: 'stderr', text, at: new Date().toISOString() };
        this.records.get(model)?.logs?.push(line);
        this.events.emit('log', line);
      });
      this.files.set(model, log);
    }
    return log;
  }

  /** One line a process wrote. */
  line(model: string, ring: LogRing | null, stream: LogLine['stream'], text: string): void {
    const line: LogLine = { model, stream, text, at: new Date().toISOString() };
    ring?.push(line);
    this.of(model).write(line);
    this.events.emit('log', line);
  }

  /** A line from Hangar itself in the process's log, so the log tells why the process replaced another. */
  note(proc: Proc, text: string): void {
    this.line(proc.model, proc.logs, 'stderr', `[hangar] ${text}`);
  }

  /** The model's log from its file (across its processes), timestamped; reachable after its process ended. */
  async tail(model: string): Promise<LogLine[]> {
    const lines = await this.of(model).tail(LOG_TAIL_LINES);
    const proc = this.records.get(model);
    if (proc && !proc.logs && !proc.retired) {
      const text = `later output unavailable: backend ${proc.backend} (pid ${proc.pid}) was adopted from a previous Hangar run and has no pipes`;
      lines.push({ model, stream: 'stderr', text, at: new Date().toISOString() });
    }
    return lines;
  }

  has(model: string): boolean {
    return this.files.has(model);
  }

  async flush(): Promise<void> {
    await Promise.all([...this.files.values()].map((log) => log.flush()));
  }
}
