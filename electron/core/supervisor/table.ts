// The persisted process table `<stateDir>/processes.json`: lets a restarted host re-adopt the backends it left
// running. Rewritten after every change (see CoalescedFile).
import { join } from 'node:path';
import { CoalescedFile } from '../coalesced-file.ts';

export interface TableEntry {
  model: string;
  backend: string;
  pid: number;
  port: number;
  startedAt: string;
  /** /proc/PID/stat field 22; with the pid it identifies the process. Null where /proc is missing. */
  startTime: string | null;
  /** The directory identity recorded at spawn (dev/ino as decimal strings). Absent in legacy entries. */
  dir?: string;
  dev?: string;
  ino?: string;
}

interface TableFile {
  version: 1;
  processes: TableEntry[];
}

export class ProcessTable {
  private readonly file: CoalescedFile<TableFile>;

  constructor(stateDir: string) {
    this.file = new CoalescedFile(join(stateDir, 'processes.json'));
  }

  get path(): string {
    return this.file.path;
  }

  /** The saved entries; a missing or unreadable table is an empty one (nothing to adopt). */
  async load(): Promise<TableEntry[]> {
    const parsed = (await this.file.read()) as Partial<TableFile> | null;
    return Array.isArray(parsed?.processes) ? parsed.processes.filter(isEntry) : [];
  }

  save(entries: TableEntry[]): void {
    this.file.save({ version: 1, processes: entries });
  }

  /** Resolves when everything saved so far is on disk; rejects if a write failed. */
  flush(): Promise<void> {
    return this.file.flush();
  }
}

function isEntry(value: unknown): value is TableEntry {
  const e = value as TableEntry;
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof e.model === 'string' &&
    typeof e.backend === 'string' &&
    Number.isInteger(e.pid) &&
    e.pid > 0 &&
    Number.isInteger(e.port)
  );
}
