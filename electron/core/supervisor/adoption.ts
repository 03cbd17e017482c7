// A host restart: the saved table's processes that still run are adopted again; models that should run start again.
import type { Platform } from '../platform/types.ts';
import type { Cgroups } from './cgroups.ts';
import type { SelfStart } from './endings.ts';
import { BackendClient } from './grpc-client.ts';
import type { Launcher } from './launcher.ts';
import type { Loader } from './loading.ts';
import type { ModelLogs } from './model-logs.ts';
import type { PortPool } from './ports.ts';
import type { ParentWatch } from './reaper.ts';
import { liveTarget, modelEntryOf, newRow, specOf, tell, type ProcessRecords } from './process-records.ts';
import { alive } from './signals.ts';
import type { ModelEntry, TableContents, TableEntry } from './table.ts';
import { oneLine } from '../../../shared/error-text.ts';

/** A model to start again; `pid` names the process of it that ended while no host watched. */
type Revival = ModelEntry & { pid?: number };

export interface AdoptionParts {
  records: ProcessRecords;
  logs: ModelLogs;
  ports: PortPool;
  parent: ParentWatch;
  cgroups: Cgroups;
  platform: Platform;
  launcher: Pick<Launcher, 'spawnReady'>;
  loader: Pick<Loader, 'reload'>;
  selfStart: SelfStart;
  backendsDir: string;
  grpcToken?: string;
}

export class Adoption {
  private restoring: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly parts: AdoptionParts) {}

  /**
   * Re-adopts the saved processes that still run. Returns the models to start again: those whose process died while
   * no host watched (as their policy says), those named in `wanted` whatever their policy, and, with `restoreOnStart`,
   * those stopped when the last host closed. The stopped ones not started are carried in the table for a later run.
   */
  async adoptSaved(saved: TableContents, restoreOnStart: boolean, wanted: Set<string>): Promise<Revival[]> {
    const gone: Array<ModelEntry & { pid: number }> = [];
    const live = new Set(await alive(this.parts.platform, saved.processes));
    for (const entry of saved.processes) if (!this.adopt(entry, live.has(entry))) gone.push(modelEntryOf(entry));
    const stopped = saved.models.filter((m) => !this.parts.records.get(m.model) && !gone.some((g) => g.model === m.model));
    const starts = (m: ModelEntry) => restoreOnStart || wanted.has(m.model);
    this.parts.records.carry(stopped.filter((m) => !starts(m)));
    return [...gone.filter((e) => e.policy !== 'never' || wanted.has(e.model)), ...stopped.filter(starts)];
  }

  /** Starts the models again in the background, each under its locks. */
  restore(models: Revival[]): void {
    this.restoring = Promise.allSettled(models.map((e) => this.resurrect(e)));
  }

  /** Starts nothing more, and waits for what is starting. */
  async close(): Promise<void> {
    this.closed = true;
    await this.restoring;
  }

  /**
   * Re-adopts a table entry if its process is still the one recorded (`running`: same pid and start time); never
   * touches others. Returns false when the recorded process is gone.
   */
  private adopt(entry: TableEntry, running: boolean): boolean {
    const { records } = this.parts;
    if (records.get(entry.model)) return true;
    if (!running) return false;
    const identity = entry.dir && entry.dev && entry.ino ? { dir: entry.dir, dev: BigInt(entry.dev), ino: BigInt(entry.ino) } : null;
    const cgroup = this.parts.cgroups.holding(entry.pid);
    this.parts.ports.claim(entry.port);
    records.setSpec(entry.model, specOf(entry));
    // Starting: ready only once it answers Health, which the host asks before it serves anything.
    const row = newRow({
      model: entry.model,
      backend: entry.backend,
      pid: entry.pid,
      port: entry.port,
      identity,
      startedAt: entry.startedAt,
      startTime: entry.startTime,
      cgroup,
      cwd: { cwd: 'unknown', cwdReason: 'adopted, not yet checked', procCwd: null },
      result: null,
      logs: null,
      detach: null,
      client: new BackendClient(`127.0.0.1:${entry.port}`, { token: this.parts.grpcToken }),
      loaded: entry.load !== undefined,
      message: 'adopted from a previous Hangar run',
    });
    this.parts.parent.watch(row);
    records.put(row);
    return true;
  }

  /** Starts again, model loaded, a model whose process a previous host run left behind (dead or stopped). */
  private resurrect(entry: Revival): Promise<void> {
    const { records, launcher, loader, logs } = this.parts;
    return this.parts.selfStart(entry.backend, entry.model, async () => {
      if (this.closed || records.get(entry.model)) return;
      const spec = specOf(entry);
      records.setSpec(entry.model, spec);
      try {
        const proc = await launcher.spawnReady(liveTarget(this.parts.backendsDir, entry.backend), entry.model, spec.load !== null);
        tell(proc, entry.pid ? `started again: pid ${entry.pid} ended while Hangar was not running` : 'started again on launch');
        await loader.reload(proc, spec);
      } catch (error) {
        logs.of(entry.model).separator(`could not start again after a host restart: ${oneLine(error)}`);
      }
    });
  }
}
