// Is a process still running out of the directory it was started in? Two independent signals: the recorded
// directory identity at its path, and what the OS says about the process's cwd.
import { readlink, stat } from 'node:fs/promises';
import type { CwdStatus } from '../../../shared/index.ts';
import { directoryChange, sameInode, type DirIdentity } from './identity.ts';

export interface CwdReport {
  cwd: CwdStatus;
  cwdReason: string;
  /** What the OS says the cwd is, e.g. `/x/echo.install-backup (deleted)`; null when it cannot tell. */
  procCwd: string | null;
}

/** `recorded` is null for a legacy table entry: then only the OS signal is available. */
export async function probeCwd(pid: number, recorded: DirIdentity | null): Promise<CwdReport> {
  const [change, os] = await Promise.all([recorded ? directoryChange(recorded) : null, probeOsCwd(pid, recorded)]);
  if (change) return { cwd: 'stale', cwdReason: change, procCwd: os.procCwd };
  return os;
}

async function probeOsCwd(pid: number, recorded: DirIdentity | null): Promise<CwdReport> {
  if (process.platform === 'linux') return probeProcCwd(pid, recorded);
  if (process.platform === 'darwin') return probeLsofCwd(pid, recorded);
  return { cwd: 'unknown', cwdReason: `no cwd probe on ${process.platform}`, procCwd: null };
}

async function probeProcCwd(pid: number, recorded: DirIdentity | null): Promise<CwdReport> {
  const link = `/proc/${pid}/cwd`;
  const [procCwd, st] = await Promise.all([
    readlink(link).catch(() => null),
    stat(link, { bigint: true }).catch((err: NodeJS.ErrnoException) => err),
  ]);
  if (st instanceof Error) {
    const why = st.code === 'EACCES' || st.code === 'EPERM' ? 'permission denied' : 'process not found';
    return { cwd: 'unknown', cwdReason: `cannot read ${link}: ${why}`, procCwd };
  }
  if (st.nlink === 0n) return { cwd: 'stale', cwdReason: 'cwd was deleted', procCwd };
  if (recorded && !sameInode(st, recorded)) {
    return { cwd: 'stale', cwdReason: `cwd is no longer ${recorded.dir}`, procCwd };
  }
  return { cwd: 'ok', cwdReason: recorded ? 'directory intact' : 'legacy entry: cwd is live', procCwd };
}

/** macOS has no /proc: ask lsof for the cwd's current path (a renamed directory shows its new name). */
async function probeLsofCwd(pid: number, recorded: DirIdentity | null): Promise<CwdReport> {
  const { execa } = await import('execa');
  const result = await execa('lsof', ['-a', '-p', String(pid), '-d', 'cwd', '-Fn'], { reject: false });
  const line = result.exitCode === 0 ? String(result.stdout).split('\n').find((l) => l.startsWith('n')) : undefined;
  if (!line) return { cwd: 'unknown', cwdReason: 'lsof could not read the cwd', procCwd: null };
  const procCwd = line.slice(1);
  if (recorded && procCwd !== recorded.dir) return { cwd: 'stale', cwdReason: `cwd is now ${procCwd}`, procCwd };
  return { cwd: 'ok', cwdReason: recorded ? 'directory intact' : 'legacy entry: cwd is live', procCwd };
}
