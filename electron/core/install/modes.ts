// Permission bits for extracted and copied trees: special bits and world-write are stripped, and chmod runs only when the
// process umask would otherwise change the requested mode (saves a syscall per entry in the common case).
import { readFileSync } from 'node:fs';

function readUmask(): number {
  try {
    const match = /^Umask:\s*([0-7]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (match?.[1]) return parseInt(match[1], 8);
  } catch {
    // not Linux: fall through
  }
  return 0o777; // unknown umask: always chmod
}

const umask = readUmask();

/** setuid, setgid and sticky bits are dropped, and so is write permission for others. */
export function fileMode(mode: number | undefined, fallback = 0o644): number {
  return (mode ?? fallback) & 0o775;
}

/** Directories always keep owner rwx so the rest of the tree can be written. */
export function dirMode(mode: number | undefined): number {
  return fileMode(mode, 0o755) | 0o700;
}

/** True when creating with `mode` under the current umask would not yield `mode` exactly. */
export function umaskAlters(mode: number): boolean {
  return (mode & umask) !== 0;
}
