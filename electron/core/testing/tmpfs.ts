// A real small filesystem for the full-disk tests (tests only): a tmpfs mounted on a directory. Mounting needs root
// (CI runs as root); anywhere else the caller is told so, loudly, and skips. As root, a mount that fails is a failure.
import { execFileSync } from 'node:child_process';
import { rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { tempDir } from './fixtures.ts';

export interface Tmpfs {
  /** Takes every free byte left, with one file. */
  fill(): Promise<void>;
  /** Takes all but about `bytes` of what is free, with that file. */
  leave(bytes: number): Promise<void>;
  /** Gives that space back. */
  free(): Promise<void>;
  unmount(): void;
}

/** A tmpfs of `size` (mount's syntax: `4m`) on `dir`, or null, said on stderr, where this process may not mount. */
export function mountTmpfs(dir: string, size: string, test: string): Tmpfs | null {
  if (process.getuid?.() !== 0) {
    process.stderr.write(`\n*** ${test} NOT RUN: it mounts a real tmpfs to fill it up, which needs root ***\n\n`);
    return null;
  }
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  const filler = join(dir, 'filler');
  return {
    async fill() {
      // tmpfs counts whole pages: once this write stops short, not one more page is free.
      await writeFile(filler, Buffer.alloc(parseSize(size))).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOSPC') throw error;
      });
    },
    async leave(bytes) {
      const { bavail, bsize } = await statfs(dir);
      await writeFile(filler, Buffer.alloc(Math.max(0, bavail * bsize - bytes)));
    },
    free: () => writeFile(filler, ''),
    // Lazily: a process the test started may still hold a file there for a moment.
    unmount: () => execFileSync('umount', ['--lazy', dir], { stdio: 'pipe' }),
  };
}

/**
 * A fresh tmpfs of `size` for test `t`, unmounted and removed after it (hooks `t` registered before run first);
 * null, with `t` skipped and said so on stderr, where the test may not mount one.
 */
export async function tmpfsForTest(t: TestContext, size: string): Promise<{ dir: string; disk: Tmpfs } | null> {
  const dir = await tempDir('tmpfs');
  const disk = mountTmpfs(dir, size, `"${t.name}"`);
  if (!disk) {
    await rm(dir, { recursive: true });
    t.skip('mounting a tmpfs needs root');
    return null;
  }
  t.after(async () => {
    disk.unmount();
    await rm(dir, { recursive: true, force: true });
  });
  return { dir, disk };
}

function parseSize(size: string): number {
  const match = /^(\d+)([km]?)$/.exec(size);
  if (!match) throw new Error(`size wants a number of bytes, k or m: ${size}`);
  return Number(match[1]) * ({ '': 1, k: 1024, m: 1 << 20 } as Record<string, number>)[match[2]!]!;
}
