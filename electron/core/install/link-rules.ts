// The one rule for symlinks in an installed tree, whichever source wrote it (archive, OCI layer, local folder):
// an absolute target is kept as written, as LocalAI keeps it (a virtualenv's `bin/python3 -> /usr/bin/python3`);
// a relative one must stay inside the tree, lexically when it is created and, once the whole tree is in, when
// followed through the tree's other links. Nothing is ever written through a link (the writers see to that).
import type { Stats } from 'node:fs';
import { lstat, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { HangarError } from '../../../shared/errors.ts';
import { isAbsolutePath, resolveLinkLexically, segmentsOf } from './paths.ts';

const MAX_LINK_HOPS = 40;

function bad(message: string): HangarError {
  return new HangarError('bad-input', message);
}

/** Refuses an empty target, or a relative one that climbs out of the tree from the link at `rel`. */
export function checkLinkTarget(rel: string, target: string): void {
  if (target === '' || (!isAbsolutePath(target) && resolveLinkLexically(rel, target) === null)) {
    throw bad(`symlink "${rel}" points outside the tree (${target || 'empty target'})`);
  }
}

/** Re-checks links against the finished tree under `root`, so chains of them cannot climb out of it. */
export async function checkLinksStayInside(root: string, rels: Iterable<string>): Promise<void> {
  for (const rel of rels) {
    if (!(await resolvesInside(root, rel))) throw bad(`symlink "${rel}" points outside the tree through other links`);
  }
}

export async function lstatOrNull(path: string): Promise<Stats | null> {
  try {
    return await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Follows `rel` through the real tree, link by link, and tells whether it stays inside. */
async function resolvesInside(root: string, rel: string): Promise<boolean> {
  const stack: string[] = [];
  let pending = rel.split('/');
  for (let hops = 0; pending.length > 0; ) {
    const segment = pending.shift()!;
    if (segment === '..') {
      if (stack.pop() === undefined) return false;
      continue;
    }
    stack.push(segment);
    const path = join(root, ...stack);
    const stats = await lstatOrNull(path);
    if (stats === null || !stats.isSymbolicLink()) continue;
    if (++hops > MAX_LINK_HOPS) return false;
    const target = await readlink(path);
    if (isAbsolutePath(target)) return true; // reaches a host path, as an absolute link may
    stack.pop();
    pending = [...segmentsOf(target), ...pending];
  }
  return true;
}
