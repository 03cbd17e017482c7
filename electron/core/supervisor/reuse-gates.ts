// The reuse gates: a process serves its backend again only while it is alive, ready, answers Health, and still
// runs from the very directory (dev/ino) it was started in.
import { resolve } from 'node:path';
import { endText, type BackendTarget, type Proc } from './process-records.ts';
import type { Rechecks } from './rechecks.ts';

export class ReuseGates {
  constructor(
    private readonly rechecks: Pick<Rechecks, 'refresh'>,
    private readonly healthTimeoutMs: number,
  ) {}

  /** Alive, ready, same backend, and (unless legacy) recorded at target.dir with the identity still there. */
  async intact(proc: Proc, target: BackendTarget): Promise<boolean> {
    if (proc.retired || proc.state !== 'ready' || proc.backend !== target.name) return false;
    if (proc.identity && proc.identity.dir !== resolve(target.dir)) return false;
    await this.rechecks.refresh(proc);
    if (proc.retired || proc.cwd.cwd === 'stale') return false;
    // Legacy entries pass on their own (gate 3), unless the OS shows their cwd is elsewhere (e.g. a backup name).
    return proc.identity !== null || proc.cwd.procCwd === null || proc.cwd.procCwd === resolve(target.dir);
  }

  /** Why an existing process cannot serve target (null: it can). Asks Health, so a hung backend is not reused. */
  async unusable(proc: Proc, target: BackendTarget): Promise<string | null> {
    if (proc.retired) return proc.exit ? `it had ${proc.state === 'exited' ? 'exited' : 'crashed'} (${endText(proc.exit)})` : 'it had ended';
    if (!(await this.intact(proc, target))) {
      if (proc.cwd.cwd === 'stale') return 'its directory was replaced';
      return proc.backend !== target.name ? `it ran backend ${proc.backend}` : `it was ${proc.state}`;
    }
    try {
      await proc.client.health(this.healthTimeoutMs);
      return null;
    } catch {
      return `it did not answer Health within ${this.healthTimeoutMs} ms`;
    }
  }
}
