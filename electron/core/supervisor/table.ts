// The persisted process table `<stateDir>/processes.json`: lets a restarted host re-adopt the backends it left
// running, and remembers every model that should run (what it loads, its policy), so a host can start them again.
// Rewritten after every change (see CoalescedFile).
import { join } from 'node:path';
import type { RestartPolicy } from '../../../shared/index.ts';
import { CoalescedFile } from '../coalesced-file.ts';
import type { LoadModelRequest } from './grpc-client.ts';

export interface TableEntry {
  model: string;
  backend: string;
  pid: number;
  port: number;
  startedAt: string;
  /** The platform layer's start time (linux: /proc/PID/stat field 22); with the pid it identifies the process. */
  startTime: string | null;
  /** The directory identity recorded at spawn (dev/ino as decimal strings). Absent in legacy entries. */
  dir?: string;
  dev?: string;
  ino?: string;
  /** What the model should run as: its restart policy, how often it was restarted, and what it had loaded. */
  policy?: RestartPolicy;
  restarts?: number;
  restartDelayMs?: number;
  maxRestarts?: number;
  startTimeoutMs?: number;
  load?: LoadModelRequest;
}

/** A model that should run, whether or not a process serves it now. */
export interface ModelEntry {
  model: string;
  backend: string;
  policy: RestartPolicy;
  restarts: number;
  restartDelayMs?: number;
  maxRestarts?: number;
  startTimeoutMs?: number;
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
  private readonly file: CoalescedFile<TableFile>;

  constructor(stateDir: string) {
    this.file = new CoalescedFile(join(stateDir, 'processes.json'));
  }

  get path(): string {
    return this.file.path;
  }

  /** The saved entries; a missing or unreadable table is an empty one (nothing to adopt). */
  async load(): Promise<TableContents> {
    const parsed = (await this.file.read()) as Partial<TableFile> | null;
    return {
      processes: Array.isArray(parsed?.processes) ? parsed.processes.filter(isEntry) : [],
      models: Array.isArray(parsed?.models) ? parsed.models.filter(isModelEntry) : [],
    };
  }

  save(contents: TableContents): void {
    this.file.save({ version: 1, ...contents });
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
