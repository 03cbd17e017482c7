// Copies a local directory tree into staging: modes kept (special bits stripped), special files refused. Symlinks
// are copied as written, by the same rule as an archive's (link-rules.ts), and never followed.
import { chmodSync, copyFileSync, lstatSync, mkdirSync, readlinkSync, symlinkSync } from 'node:fs';
import { copyFile, readdir, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { HangarError } from '../../../shared/errors.ts';
import { TreeTally, type ExtractLimits } from './limits.ts';
import { checkLinksStayInside, checkLinkTarget } from './link-rules.ts';
import { dirMode, fileMode, umaskAlters } from './modes.ts';
import type { OwnTreeGuard } from './own-trees.ts';
import { nameTooLong } from './paths.ts';
import { SMALL_FILE } from './tree-writer.ts';

/** Entries handled with blocking calls (as small files are) before the event loop gets a turn. */
const ENTRIES_PER_TURN = 256;

export interface CopyOptions {
  limits: ExtractLimits;
  signal: AbortSignal;
  /** Reports the file bytes copied so far. */
  onBytes(bytes: number): void;
  /** Refuses a directory of Hangar's own met inside the source (through a bind mount, say). */
  guard?: OwnTreeGuard;
}

/** Copies `sourceDir` into the existing empty `destDir`, within the same limits an archive has. */
export async function copyTree(sourceDir: string, destDir: string, { limits, signal, onBytes, guard }: CopyOptions): Promise<void> {
  const root = await realpath(sourceDir);
  const tally = new TreeTally(sourceDir, limits);
  const links: string[] = [];
  let copied = 0;
  let sinceTurn = 0;
  const walk = async (rel: string): Promise<void> => {
    for (const name of await readdir(join(root, rel))) {
      signal.throwIfAborted();
      if (++sinceTurn >= ENTRIES_PER_TURN) {
        sinceTurn = 0;
        await nextTurn();
      }
      const childRel = rel === '' ? name : `${rel}/${name}`;
      try {
        const from = join(root, childRel);
        const to = join(destDir, childRel);
        const stats = lstatSync(from, { bigint: true });
        const mode = Number(stats.mode);
        const size = Number(stats.size);
        tally.add(stats.isFile() ? size : 0);
        if (stats.isDirectory()) {
          guard?.checkDir(sourceDir, childRel, stats);
          mkdirSync(to, dirMode(mode));
          if (umaskAlters(dirMode(mode))) chmodSync(to, dirMode(mode));
          await walk(childRel);
        } else if (stats.isFile()) {
          if (size <= SMALL_FILE) copyFileSync(from, to);
          else await copyFile(from, to);
          if (fileMode(mode) !== (mode & 0o7777)) chmodSync(to, fileMode(mode));
          onBytes((copied += size));
        } else if (stats.isSymbolicLink()) {
          const target = readlinkSync(from);
          checkLinkTarget(childRel, target);
          symlinkSync(target, to);
          links.push(childRel);
        } else {
          throw new HangarError('bad-input', `"${childRel}" is a device, FIFO or socket, which backends may not contain`);
        }
      } catch (err) {
        throw nameTooLong(err, childRel);
      }
    }
  };
  await walk('');
  await checkLinksStayInside(destDir, links);
}
