// Test helper: a tree shaped like real backends, which every source must install. A big incompressible file first (a
// CUDA build begins so), a libLLVM-like library gzip shrinks 3x, a virtualenv (absolute and relative links),
// hardlinks (one to a symlink), many small files, unicode, odd and deep names. Also: a fingerprint of a tree.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { link, lstat, mkdir, readdir, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { compressesThreeTimes, incompressible, sha256OfFile, writeStream } from './big-files.ts';

export interface LegitTreeSizes {
  incompressibleBytes: number;
  libraryBytes: number;
  smallFiles: number;
}

export const FIRST_FILE = '0-incompressible.bin';
const SMALL_PER_DIR = 100;
const DEEP_LEVELS = 40;

export const DEEP_FILE = Array.from({ length: DEEP_LEVELS }, (_, i) => `level-${String(i).padStart(2, '0')}-${'d'.repeat(40)}`).join('/') + '/bottom.txt';

export const UNICODE_NAMES = [
  'données/модель/数据 🚀.txt',
  'caf\u00e9.txt', // NFC
  'cafe\u0301.txt', // NFD: another name, which nothing may normalise into the first
  'עברית/عربي.txt',
  "with space & 'quote'.txt",
];

/** Names that are ordinary on Linux but look like a Windows path: kept as written. */
export const ODD_NAMES = ['back\\slash.txt', 'c:weird.txt'];

/** Writes the tree into `dir` (which must not exist); returns its top-level names, the big file first. */
export async function buildLegitTree(dir: string, sizes: LegitTreeSizes): Promise<string[]> {
  await mkdir(join(dir, 'lib'), { recursive: true });
  await writeStream(join(dir, FIRST_FILE), incompressible(sizes.incompressibleBytes));
  await writeFile(join(dir, 'run.sh'), '#!/bin/sh\nexec ./venv/bin/python backend.py "$@"\n', { mode: 0o755 });
  await writeStream(join(dir, 'lib/libLLVM.so.18.1'), compressesThreeTimes(sizes.libraryBytes));
  await writeFile(join(dir, 'lib/libfoo.so.1'), 'ELF foo');
  await link(join(dir, 'lib/libfoo.so.1'), join(dir, 'lib/libfoo.so.1.0'));
  await symlink('libfoo.so.1', join(dir, 'lib/libfoo.so'));
  await link(join(dir, 'lib/libfoo.so'), join(dir, 'lib/libfoo-compat.so')); // link(2) does not follow a symlink on Linux

  await mkdir(join(dir, 'venv/bin'), { recursive: true });
  await mkdir(join(dir, 'venv/lib/python3.11/site-packages'), { recursive: true });
  await writeFile(join(dir, 'venv/pyvenv.cfg'), 'home = /usr/bin\ninclude-system-site-packages = false\n');
  await writeFile(join(dir, 'venv/lib/python3.11/site-packages/backend.py'), 'import grpc\n');
  await symlink('/usr/bin/python3', join(dir, 'venv/bin/python3'));
  await symlink('python3', join(dir, 'venv/bin/python'));
  await link(join(dir, 'venv/bin/python3'), join(dir, 'venv/bin/python3.11'));
  await symlink('lib', join(dir, 'venv/lib64'));

  for (const name of [...UNICODE_NAMES, ...ODD_NAMES, DEEP_FILE]) {
    await mkdir(join(dir, name, '..'), { recursive: true });
    await writeFile(join(dir, name), `${name}\n`);
  }
  writeSmallFiles(join(dir, 'site-packages'), sizes.smallFiles);
  const rest = (await readdir(dir)).filter((n) => n !== FIRST_FILE).sort();
  return [FIRST_FILE, ...rest];
}

/** Python-sized files, a hundred to a package; written with blocking calls, which is quickest for this many. */
export function writeSmallFiles(dir: string, count: number): void {
  for (let i = 0; i < count; i++) {
    const pkg = join(dir, `pkg${Math.floor(i / SMALL_PER_DIR)}`);
    if (i % SMALL_PER_DIR === 0) mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, `mod${i % SMALL_PER_DIR}.py`), `# module ${i}\nimport os\n`.repeat(1 + (i % 60)));
  }
}

export interface Fingerprint {
  /** Relative path -> what an install must reproduce: kind, permission bits, content hash or link target. */
  entries: Map<string, string>;
  /** Regular files sharing an inode, grouped (sorted paths per group). */
  hardlinks: string[][];
}

export async function fingerprint(dir: string, skip: string[] = []): Promise<Fingerprint> {
  const entries = new Map<string, string>();
  const byInode = new Map<bigint, string[]>();
  const walk = async (rel: string): Promise<void> => {
    for (const name of await readdir(join(dir, rel))) {
      const child = rel === '' ? name : `${rel}/${name}`;
      if (skip.includes(child)) continue;
      const path = join(dir, child);
      const stats = await lstat(path, { bigint: true });
      const mode = (stats.mode & 0o7777n).toString(8);
      if (stats.isSymbolicLink()) entries.set(child, `symlink -> ${await readlink(path)}`);
      else if (stats.isDirectory()) {
        entries.set(child, `dir ${mode}`);
        await walk(child);
      } else {
        entries.set(child, `file ${mode} ${stats.size} ${stats.size > 1n << 20n ? await sha256OfFile(path) : hashSmall(path)}`);
        if (stats.nlink > 1n) byInode.set(stats.ino, [...(byInode.get(stats.ino) ?? []), child]);
      }
    }
  };
  await walk('');
  return { entries, hardlinks: [...byInode.values()].map((group) => group.sort()).sort() };
}

function hashSmall(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}
