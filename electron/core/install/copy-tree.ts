// Copies a local directory tree into staging: modes kept (special bits stripped), special files refused. Symlinks
// are copied as written (as LocalAI's copy does): an absolute one names a host file, a relative one must stay inside
// the source tree. Never follows a link.
import { chmod, copyFile, lstat, mkdir, readdir, readlink, realpath, symlink } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { HangarError } from '../../../shared/errors.ts';
import { TreeTally, type ExtractLimits } from './limits.ts';
import { dirMode, fileMode, umaskAlters } from './modes.ts';
import { isAbsolutePath, resolveLinkLexically } from './paths.ts';

async function staysInside(root: string, linkPath: string, rel: string, target: string): Promise<boolean> {
  if (resolveLinkLexically(rel, target) === null) return false;
  try {
    const resolved = await realpath(linkPath);
    return resolved === root || resolved.startsWith(root + sep);
  } catch {
    return true; // dangling: the lexical check above is all there is to check
  }
}

export interface CopyOptions {
  limits: ExtractLimits;
  signal: AbortSignal;
  /** Reports the file bytes copied so far. */
  onBytes(bytes: number): void;
}

/** Copies `sourceDir` into the existing empty `destDir`, within the same limits an archive has. */
export async function copyTree(sourceDir: string, destDir: string, { limits, signal, onBytes }: CopyOptions): Promise<void> {
  const root = await realpath(sourceDir);
  const tally = new TreeTally(sourceDir, limits);
  let copied = 0;
  const walk = async (dir: string, dest: string): Promise<void> => {
    for (const name of await readdir(dir)) {
      signal.throwIfAborted();
      const from = join(dir, name);
      const to = join(dest, name);
      const rel = relative(root, from).split(sep).join('/');
      const stats = await lstat(from);
      tally.add(stats.isFile() ? stats.size : 0);
      if (stats.isDirectory()) {
        const mode = dirMode(stats.mode);
        await mkdir(to, mode);
        if (umaskAlters(mode)) await chmod(to, mode);
        await walk(from, to);
      } else if (stats.isFile()) {
        await copyFile(from, to);
        if (fileMode(stats.mode) !== (stats.mode & 0o7777)) await chmod(to, fileMode(stats.mode));
        onBytes((copied += stats.size));
      } else if (stats.isSymbolicLink()) {
        const target = await readlink(from);
        if (!isAbsolutePath(target) && !(await staysInside(root, from, rel, target))) {
          throw new HangarError('bad-input', `symlink "${rel}" points outside the source tree (${target})`);
        }
        await symlink(target, to);
      } else {
        throw new HangarError('bad-input', `"${rel}" is a device, FIFO or socket, which backends may not contain`);
      }
    }
  };
  await walk(root, destDir);
}
