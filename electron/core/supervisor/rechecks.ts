// Stale detection: each process's cwd is checked again on fs.watch events, on a slow backstop timer, and on request.
import { watch, type FSWatcher } from 'node:fs';
import type { Platform } from '../platform/types.ts';
import { probeCwds, recordedChanges, type CwdReport } from './cwd-probe.ts';
import type { Endings } from './endings.ts';
import type { Proc, ProcessRecords } from './process-records.ts';

const WATCH_DEBOUNCE_MS = 2;

export class Rechecks {
  private watcher: FSWatcher | null = null;
  private backstop: NodeJS.Timeout | null = null;
  private debounce: NodeJS.Timeout | null = null;
  private rechecking: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly records: ProcessRecords,
    private readonly endings: Pick<Endings, 'endedUnseen'>,
    private readonly platform: Platform,
  ) {}

  /** Checks every process once, then on every change under `backendsDir` and every `backstopMs`. */
  async start(backendsDir: string, backstopMs: number): Promise<void> {
    await this.recheck();
    this.watcher = watch(backendsDir, () => this.schedule());
    this.watcher.on('error', () => undefined);
    this.backstop = setInterval(() => void this.recheck(), backstopMs).unref();
  }

  /** Stops watching; a recheck under way goes on (see idle). */
  stop(): void {
    this.watcher?.close();
    if (this.backstop) clearInterval(this.backstop);
    if (this.debounce) clearTimeout(this.debounce);
  }

  /** Resolves when no recheck is under way. */
  async idle(): Promise<void> {
    await this.rechecking;
  }

  /** Re-checks every process's cwd now; emits 'process' for each one whose status changed. Coalesces calls. */
  recheck(): Promise<void> {
    if (this.rechecking) {
      this.again = true;
      return this.rechecking;
    }
    this.rechecking = (async () => {
      do {
        this.again = false;
        await this.refreshAll(this.records.all());
      } while (this.again);
      this.rechecking = null;
    })();
    return this.rechecking;
  }

  /** Re-probes one process's cwd (and, for an adopted one, whether it still lives); emits on change. */
  refresh(proc: Proc): Promise<void> {
    return this.refreshAll([proc]);
  }

  /** Re-probes the cwds of `procs` with one question to the OS; emits for each that changed. */
  private async refreshAll(procs: Proc[]): Promise<void> {
    const current = procs.filter((proc) => !proc.retired);
    const probes = current.map((proc) => ({ pid: proc.pid, recorded: proc.identity }));
    const changes = await recordedChanges(probes);
    // A replaced directory is told by its recorded identity alone, so it is said at once; what the OS says the cwd
    // is (unknown until then, not the path it had) follows: under the POSIX layer, one `ps` and one `lsof` away.
    for (const [i, proc] of current.entries()) {
      const change = changes[i];
      if (change && proc.cwd.cwd !== 'stale') this.update(proc, { cwd: 'stale', cwdReason: change, procCwd: null });
    }
    const ended = new Set(await this.endings.endedUnseen(current));
    const live = current.flatMap((proc, i) => (ended.has(proc) ? [] : [{ proc, probe: probes[i]!, change: changes[i]! }]));
    const reports = await probeCwds(this.platform, live.map((l) => l.probe), live.map((l) => l.change));
    for (const [i, { proc }] of live.entries()) this.update(proc, reports[i]!);
  }

  private update(proc: Proc, report: CwdReport): void {
    if (proc.retired) return;
    const changed = report.cwd !== proc.cwd.cwd || report.cwdReason !== proc.cwd.cwdReason || report.procCwd !== proc.cwd.procCwd;
    proc.cwd = report;
    if (changed) this.records.publish(proc);
  }

  private schedule(): void {
    if (this.debounce) return;
    this.debounce = setTimeout(() => {
      this.debounce = null;
      void this.recheck();
    }, WATCH_DEBOUNCE_MS);
  }
}
