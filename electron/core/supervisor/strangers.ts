// The processes running from the backends directory, Hangar's own and others: what a scan shows, and which of
// them a user may stop through Hangar (its own, and strangers only when their directory was replaced).
import { HangarError, type ScanEntry } from '../../../shared/index.ts';
import type { Platform } from '../platform/types.ts';
import type { Proc, ProcessRecords } from './process-records.ts';
import { scanProcesses } from './scan.ts';
import type { Stopping } from './stopping.ts';

export class Strangers {
  constructor(
    private readonly records: ProcessRecords,
    private readonly stopping: Stopping,
    private readonly backendsDir: string,
    private readonly platform: Platform,
  ) {}

  async scan(): Promise<ScanEntry[]> {
    const procs = this.records.all().filter((p) => !p.retired);
    return scanProcesses(this.platform, this.backendsDir, procs, await this.owners(procs));
  }

  /**
   * The process `pid` if a user may stop it through Hangar: one a scan finds that is supervised (its model is
   * returned, to be stopped as such), or that Hangar did not start and whose cwd is stale. Never an arbitrary pid.
   */
  async stoppable(pid: number): Promise<{ entry: ScanEntry; model: string | null }> {
    const entry = pid === process.pid ? undefined : (await this.scan()).find((e) => e.pid === pid);
    if (!entry) throw new HangarError('not-found', `pid ${pid} is not a process of this node's backends (see scan)`);
    if (!entry.supervised && entry.status !== 'stale') {
      throw new HangarError('forbidden', `pid ${pid} (${entry.command || 'no command line'}) was not started by Hangar and its directory is live: Hangar stops only its own processes and stale ones`);
    }
    const procs = this.records.all().filter((p) => !p.retired);
    const own = procs.find((p) => p.pid === pid);
    if (own) return { entry, model: own.model };
    const owner = entry.supervised ? (await this.owners(procs)).get(pid) : undefined;
    // A backend's process goes with all of it, never alone: what is left would serve half a backend.
    if (owner) throw new HangarError('conflict', `pid ${pid} (${entry.command || 'no command line'}) belongs to the backend process of model ${owner.model} (pid ${owner.pid}): stop or respawn the model`);
    return { entry, model: null };
  }

  /** SIGTERM, then SIGKILL after the grace period, to one process Hangar did not start (stoppable() vetted it). */
  stop(pid: number): Promise<void> {
    return this.stopping.stranger(pid);
  }

  /**
   * Every process of each supervised backend (its cgroup, group, session and descendants), by pid: the row it is part
   * of. Read as a stop reads a backend's processes (the platform layer's trees), against the start times recorded at spawn.
   */
  private async owners(procs: Proc[]): Promise<Map<number, Proc>> {
    const owner = new Map<number, Proc>();
    for (const [i, tree] of (await this.platform.trees(procs)).entries()) for (const member of tree) if (!owner.has(member.pid)) owner.set(member.pid, procs[i]!);
    for (const proc of procs) owner.set(proc.pid, proc);
    return owner;
  }
}
