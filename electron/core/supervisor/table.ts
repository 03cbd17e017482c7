// The persisted process table `<stateDir>/processes.json`: lets a restarted host re-adopt the backends it left
// running, and remembers every model that should run (what it loads, its policy), so a host can start them again.
// Written atomically (tmp + rename) after every change; writes are coalesced so the newest state wins.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RestartPolicy } from '../../../shared/index.ts';
import type { LoadModelRequest } from './grpc-client.ts';

let writes = 0;

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
  /** What the model should run as: its restart policy, how often it was restarted, and what it had loaded. */
  policy?: RestartPolicy;
  restarts?: number;
  load?: LoadModelRequest;
}

/** A model that should run, whether or not a process serves it now. */
export interface ModelEntry {
  model: string;
  backend: string;
  policy: RestartPolicy;
  restarts: number;
  port: number | null;
  load?: LoadModelRequest;
}

export interface TableContents {
  processes: TableEntry[];
  models: ModelEntry[];
}

interface TableFile extends TableContents {
  version: 1;
}

export class ProcessTable {
  readonly path: string;
  private pending: TableContents | null = null;
  private writing: Promise<void> | null = null;
  private failure: Error | null = null;

  constructor(private readonly stateDir: string) {
    this.path = join(stateDir, 'processes.json');
  }

  /** The saved entries; a missing or unreadable table is an empty one (nothing to adopt). */
  async load(): Promise<TableContents> {
    try {
      const parsed = JSON.parse(await readFile(this.path, 'utf8')) as Partial<TableFile>;
      return {
        processes: Array.isArray(parsed.processes) ? parsed.processes.filter(isEntry) : [],
        models: Array.isArray(parsed.models) ? parsed.models.filter(isModelEntry) : [],
      };
    } catch {
      return { processes: [], models: [] };
    }
  }

  save(contents: TableContents): void {
    this.pending = contents;
    this.writing ??= this.drain();
  }

  /** Resolves when everything saved so far is on disk; rejects if a write failed. */
  async flush(): Promise<void> {
    await this.writing;
    if (this.failure) throw this.failure;
  }

  private async drain(): Promise<void> {
    await mkdir(this.stateDir, { recursive: true }).catch(() => undefined);
    while (this.pending) {
      const contents = this.pending;
      this.pending = null;
      const tmp = `${this.path}.${process.pid}.${++writes}.tmp`;
      try {
        await writeFile(tmp, JSON.stringify({ version: 1, ...contents } satisfies TableFile, null, 2) + '\n');
        await rename(tmp, this.path);
        this.failure = null;
      } catch (err) {
        this.failure = err as Error;
      }
    }
    this.writing = null;
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

function isModelEntry(value: unknown): value is ModelEntry {
  const e = value as ModelEntry;
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof e.model === 'string' &&
    typeof e.backend === 'string' &&
    ['never', 'on-failure', 'always'].includes(e.policy) &&
    Number.isInteger(e.restarts) &&
    (e.port === null || Number.isInteger(e.port))
  );
}
