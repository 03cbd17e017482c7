// Ending processes on purpose: a supervised one with its whole tree, all of a directory's before a swap, a stranger.
import { resolve } from 'node:path';
import type { KeyedLock } from '../locks.ts';
import type { Platform } from '../platform/types.ts';
import type { Cgroups } from './cgroups.ts';
import type { Endings } from './endings.ts';
import { dirIdentity, sameInode } from './identity.ts';
import type { Proc, ProcessRecords } from './process-records.ts';
import { processesInDirectory } from './scan.ts';
import { isSameProcess, signalTree, startTimeOf } from './signals.ts';
import { settlesWithin, stopTree, waitForExit } from './tree-stop.ts';

const FREE_LIMIT_MS = 5000;

/**
 * What a stop before a swap did: the supervised processes it stopped, and the others it found: left running, or
 * stopped because the user said so (stopUnsupervised).
 */
export interface DirectoryStop {
  stopped: Array<{ model: string; backend: string }>;
  leftRunning: Array<{ pid: number; command: string }>;
  stoppedUnsupervised: Array<{ pid: number; command: string }>;
}

export interface DirectoryStopOptions {
  /**
   * The backend whose directory is swapped: its supervised processes that run from a directory replaced outside
   * Hangar (stale) are stopped too, so that they start again from the new tree.
   */
  backend?: string;
  stopUnsupervised?: boolean;
  /** Processes another runner (a LocalAI server) brings back itself: neither stopped nor reported as left running. */
  spare?: number[];
  onChosen?(stopped: DirectoryStop['stopped']): void;
}

export class Stopping {
  constructor(
    private readonly records: ProcessRecords,
    private readonly endings: Endings,
    private readonly lock: KeyedLock,
    private readonly cgroups: Cgroups,
    private readonly graceMs: number,
    private readonly platform: Platform,
  ) {}

  /**
   * Free (unless forced), SIGTERM to all of the process (its cgroup, group, session and descendants), SIGKILL after
   * the grace period, reap; the row goes once none of it is left, or its log says what is. The caller holds the
   * model's lock.
   */
  async process(proc: Proc, force: boolean): Promise<void> {
    if (proc.retired) return;
    proc.stopping = true;
    // A backend that does not answer Health would not answer Free either: straight to the signals.
    const answers = proc.state !== 'unresponsive';
    proc.state = 'stopping';
    this.records.publish(proc);
    // The tree (milliseconds of /proc, or one ps) is read before Free: until Free the backend still serves.
    const [tree] = await this.platform.trees([proc]);
    if (!force && answers) await proc.client.free(FREE_LIMIT_MS).catch(() => undefined);
    const exited = proc.result ?? waitForExit(async () => !(await isSameProcess(this.platform, proc.pid, proc.startTime)));
    const left = await stopTree({ platform: this.platform, cgroups: this.cgroups }, proc, exited, this.graceMs, tree);
    this.endings.retire(proc, left);
  }

  /** Stops a model's process and keeps what it should run as (a swap, a host closing): its row goes. */
  halt(model: string): Promise<void> {
    return this.lock.run(model, async () => {
      const proc = this.records.get(model);
      if (proc?.retired) this.records.removeRow(proc);
      else if (proc) await this.process(proc, false);
    });
  }

  /**
   * Before a swap: stops every supervised process whose recorded directory identity is dir's current identity
   * (never by name), and the swapped backend's others (they run from a tree replaced outside Hangar), each with its
   * whole tree. Other processes whose cwd is inside dir (by the cwd's identity or path)
   * are stopped only with stopUnsupervised; otherwise they are left running and reported. `onChosen` hears which
   * supervised processes it stops as soon as that is known, before they have exited.
   */
  async directory(dir: string, options: DirectoryStopOptions): Promise<DirectoryStop> {
    const target = await dirIdentity(resolve(dir));
    const [running, table] = await Promise.all([processesInDirectory(this.platform, resolve(dir), target), this.platform.processes()]);
    const supervised = this.records.all().filter((p) => {
      if (p.retired) return false;
      if (!p.identity) return running.has(p.pid);
      const inDir = target !== null && sameInode(p.identity, target);
      return inDir || p.backend === options.backend;
    });
    // A supervised backend's own descendants are stopped with it, not reported as someone else's.
    const ours = new Set(this.records.all().map((p) => p.pid));
    for (const tree of await this.platform.trees(supervised)) for (const member of tree) ours.add(member.pid);
    const spared = new Set(options.spare);
    const strangers = [...running].filter((pid) => !ours.has(pid) && !spared.has(pid) && pid !== process.pid);
    const named = strangers.map((pid) => ({ pid, command: table.find((p) => p.pid === pid)?.command ?? '' }));
    const stopped = supervised.map((p) => ({ model: p.model, backend: p.backend }));
    options.onChosen?.(stopped);
    await Promise.all([
      ...supervised.map((p) => this.halt(p.model)),
      ...(options.stopUnsupervised ? strangers.map((pid) => this.stranger(pid)) : []),
    ]);
    return options.stopUnsupervised ? { stopped, leftRunning: [], stoppedUnsupervised: named } : { stopped, leftRunning: named, stoppedUnsupervised: [] };
  }

  /**
   * SIGTERM, then SIGKILL after the grace period, to one process Hangar did not start (the caller vetted it): the
   * process as it is now, so a pid reused meanwhile is never signalled.
   */
  async stranger(pid: number): Promise<void> {
    const member = { pid, startTime: await startTimeOf(this.platform, pid) };
    await signalTree(this.platform, [member], 'SIGTERM');
    const gone = waitForExit(async () => !(await isSameProcess(this.platform, member.pid, member.startTime)));
    if (!(await settlesWithin(gone, this.graceMs))) await signalTree(this.platform, [member], 'SIGKILL');
    await gone;
  }
}
