// Keeps a local source from being Hangar's own tree. A folder that is the backends directory, holds it or lies inside
// it would copy staging (which lives there) into itself, and the home holds the node's secrets. Directories are
// compared by device and inode, never by path, so a bind mount or a symlink reaching them is recognised too.
import { stat, realpath } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { BigIntStats } from 'node:fs';
import { HangarError } from '../../../shared/errors.ts';

export interface OwnTreePaths {
  /** The Hangar home: a source may be neither it nor a folder holding it. */
  home?: string | undefined;
  /** The backends directory: a source may not be it, hold it, or lie inside it. */
  backendsDir?: string | undefined;
}

interface OwnTree {
  /** How messages name it: "the Hangar home /x". */
  name: string;
  path: string;
  id: string;
  refuseInside: boolean;
}

function idOf(stats: BigIntStats): string {
  return `${stats.dev}:${stats.ino}`;
}

async function statOrNull(path: string): Promise<BigIntStats | null> {
  try {
    return await stat(path, { bigint: true });
  } catch {
    return null; // not there (yet): nothing of it can be copied
  }
}

/** The identities of `path` and of every directory above it, nearest first. */
async function selfAndAncestors(path: string): Promise<string[]> {
  const ids: string[] = [];
  for (let dir = await realpath(path); ; dir = dirname(dir)) {
    const stats = await statOrNull(dir);
    if (stats) ids.push(idOf(stats));
    if (dirname(dir) === dir) return ids;
  }
}

function refused(source: string, why: string): HangarError {
  return new HangarError('bad-input', `${source} ${why}, so it cannot be a backend's source`);
}

export class OwnTreeGuard {
  private constructor(private readonly trees: OwnTree[]) {}

  static async of(paths: OwnTreePaths): Promise<OwnTreeGuard> {
    const wanted = [
      { name: 'the Hangar home', path: paths.home, refuseInside: false },
      { name: 'the backends directory', path: paths.backendsDir, refuseInside: true },
    ];
    const trees: OwnTree[] = [];
    for (const { name, path, refuseInside } of wanted) {
      const stats = path === undefined ? null : await statOrNull(path);
      if (path !== undefined && stats?.isDirectory()) trees.push({ name: `${name} ${path}`, path, id: idOf(stats), refuseInside });
    }
    return new OwnTreeGuard(trees);
  }

  /** Refuses a source directory that is one of these trees, holds one, or lies inside the backends directory. */
  async checkSource(source: string): Promise<void> {
    if (this.trees.length === 0) return;
    const [own, ...above] = await selfAndAncestors(source);
    const same = this.trees.find((tree) => tree.id === own);
    if (same) throw refused(source, `is ${same.name}`);
    const within = this.trees.find((tree) => tree.refuseInside && above.includes(tree.id));
    if (within) throw refused(source, `is inside ${within.name}`);
    for (const tree of this.trees) {
      if ((await selfAndAncestors(tree.path)).includes(own!)) throw refused(source, `holds ${tree.name}`);
    }
  }

  /** Refuses a directory met while copying `source` that is one of these trees (a bind mount inside it, say). */
  checkDir(source: string, rel: string, stats: BigIntStats): void {
    const id = idOf(stats);
    const tree = this.trees.find((t) => t.id === id);
    if (tree) throw refused(source, `holds ${tree.name} at "${rel}"`);
  }
}
