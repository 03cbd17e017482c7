// Is a process still running out of the directory it was started in? Two independent signals: the recorded
// directory identity at its path, and what the OS says about the process's cwd (through the platform layer: /proc on
// Linux, one lsof for every process asked about at once elsewhere).
import type { CwdStatus } from '../../../shared/index.ts';
import type { Platform, ProcessCwd } from '../platform/types.ts';
import { directoryChange, sameInode, type DirIdentity } from './identity.ts';

export interface CwdReport {
  cwd: CwdStatus;
  cwdReason: string;
  /** What the OS says the cwd is, e.g. `/x/echo.install-backup (deleted)`; null when it cannot tell. */
  procCwd: string | null;
}

/** `recorded` is null for a legacy table entry: then only the OS signal is available. */
export interface CwdProbe {
  pid: number;
  recorded: DirIdentity | null;
}

/** What changed at each recorded directory identity's path (null: nothing, or no identity was recorded). */
export function recordedChanges(probes: CwdProbe[]): Promise<Array<string | null>> {
  return Promise.all(probes.map((p) => (p.recorded ? directoryChange(p.recorded) : null)));
}

/** Each process's report, the OS asked once for all of them; `changes` are recordedChanges(probes), if known. */
export async function probeCwds(platform: Platform, probes: CwdProbe[], changes?: Array<string | null>): Promise<CwdReport[]> {
  const [shown, told] = await Promise.all([platform.cwds(probes.map((p) => p.pid)), changes ?? recordedChanges(probes)]);
  return probes.map((probe, i) => {
    const os = osReport(probe, shown.get(probe.pid));
    const change = told[i];
    return change ? { cwd: 'stale', cwdReason: change, procCwd: os.procCwd } : os;
  });
}

function osReport({ pid, recorded }: CwdProbe, cwd: ProcessCwd | undefined): CwdReport {
  if (!cwd) return { cwd: 'unknown', cwdReason: `cannot read the cwd of pid ${pid}: process not found or permission denied`, procCwd: null };
  const procCwd = cwd.deleted ? `${cwd.path} (deleted)` : cwd.path;
  if (cwd.deleted) return { cwd: 'stale', cwdReason: 'cwd was deleted', procCwd };
  if (cwd.dev === null || cwd.ino === null) return { cwd: 'unknown', cwdReason: `the OS shows only the path of pid ${pid}'s cwd`, procCwd };
  if (recorded && !sameInode({ dev: cwd.dev, ino: cwd.ino }, recorded)) return { cwd: 'stale', cwdReason: `cwd is no longer ${recorded.dir}`, procCwd };
  return { cwd: 'ok', cwdReason: recorded ? 'directory intact' : 'legacy entry: cwd is live', procCwd };
}
