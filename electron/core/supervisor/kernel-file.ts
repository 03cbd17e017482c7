// Files the kernel makes up as they are read (/proc, cgroupfs) report a size of 0, so readFileSync reads each into a
// fresh 64 KiB buffer: a stop, a scan or a usage sample reads hundreds of them, and allocated megabytes for a few
// hundred bytes each. These short files are read into one buffer, reused.
import { closeSync, openSync, readSync } from 'node:fs';

let buffer = Buffer.allocUnsafe(4096);

/** The whole text of such a file; throws as readFileSync does (ENOENT for a process that is gone). */
export function readKernelFile(path: string, encoding: 'latin1' | 'utf8' = 'latin1'): string {
  const fd = openSync(path, 'r');
  try {
    let length = 0;
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) return buffer.toString(encoding, 0, length);
      length += read;
      if (length === buffer.length) {
        const larger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(larger);
        buffer = larger;
      }
    }
  } finally {
    closeSync(fd);
  }
}
