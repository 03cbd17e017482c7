// Writes archive entries into a destination tree, one at a time, refusing anything that would land outside it.
// It keeps a cache of directories known to be real (not symlinks) so the common case costs no extra syscalls.
import { chmodSync, closeSync, constants, fchmodSync, mkdirSync, openSync, writevSync, type Stats } from 'node:fs';
import { chmod, link, lstat, mkdir, open, readdir, rm, symlink } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { HangarError } from '../../../shared/errors.ts';
import { checkLinksStayInside, checkLinkTarget, lstatOrNull } from './link-rules.ts';
import { dirMode, fileMode, umaskAlters } from './modes.ts';
import { ancestorsOf, baseOf, isSameOrUnder, parentOf, safeEntryPath } from './paths.ts';

/** An entry's content: whole, as slices, or a stream. The writer may leave it unread. */
export type EntryBody = Buffer[] | AsyncIterable<Buffer>;

export interface EntryHeader {
  name: string;
  type?: string | null | undefined;
  size?: number | undefined;
  mode?: number | undefined;
  linkname?: string | null | undefined;
}

const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);
const WHITEOUT = '.wh.';
const OPAQUE = '.wh..wh..opq';
const WRITE_BATCH = 1 << 20;
/**
 * Files up to this size are written (or copied, copy-tree.ts) with blocking calls: a small file costs three
 * thread-pool round trips (open, write, close) when written asynchronously, which made many-small-file trees
 * several times slower than tar. Blocking for one small file is shorter than one of those round trips.
 */
export const SMALL_FILE = 256 * 1024;

type Kind = 'file' | 'dir' | 'symlink';

function bad(message: string): HangarError {
  return new HangarError('bad-input', message);
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

export class TreeWriter {
  /** Relative paths known to be real directories ('' is the root). */
  private readonly realDirs = new Set<string>(['']);
  /** What this extraction wrote or entered, by relative path (hardlinks may only target files in here). */
  private readonly written = new Map<string, Kind>();
  /** Symlinks this extraction created, by relative path, with their targets as written. */
  private readonly symlinks = new Map<string, string>();

  private readonly root: string;
  /** The root and a separator: what every path written starts with. */
  private readonly prefix: string;

  constructor(
    root: string,
    private readonly whiteouts: boolean,
  ) {
    this.root = resolve(root);
    this.prefix = this.root.endsWith(sep) ? this.root : this.root + sep;
  }

  /**
   * Applies one entry; `body` is its content (read for files only). A small file in a directory already known is
   * written at once, with no promise: the promises of a tree of 50,000 small files took a sixth of the agent's user time.
   */
  apply(header: EntryHeader, body: EntryBody): void | Promise<void> {
    const rel = safeEntryPath(header.name);
    if (this.whiteouts && baseOf(rel).startsWith(WHITEOUT)) return this.whiteout(rel);
    if (rel === '') {
      if (header.type !== 'directory') throw bad(`entry "${header.name}" has no name`);
      return;
    }
    switch (header.type) {
      case 'file':
      case 'contiguous-file':
        return Array.isArray(body) ? this.writeSmallFile(rel, fileMode(header.mode), body) : this.writeFile(rel, fileMode(header.mode), body);
      case 'directory':
        return this.makeDir(rel, dirMode(header.mode));
      case 'symlink':
        return this.makeSymlink(rel, header.linkname ?? '');
      case 'link':
        return this.makeHardlink(rel, header.linkname ?? '');
      case 'character-device':
      case 'block-device':
      case 'fifo':
        throw bad(`entry "${rel}" is a ${header.type}, which backends may not contain`);
      default:
        throw bad(`entry "${rel}" has an unsupported type (${header.type ?? 'unknown'})`);
    }
  }

  /** Re-checks every symlink against the finished tree, so chains of them cannot climb out of it. */
  async finish(): Promise<void> {
    await checkLinksStayInside(this.root, [...this.symlinks.keys()].filter((rel) => this.written.get(rel) === 'symlink'));
  }

  /** `rel` is already plain (safeEntryPath): on POSIX it is appended as it is, not normalized again for every entry. */
  private abs(rel: string): string {
    if (rel === '') return this.root;
    return sep === '/' ? this.prefix + rel : join(this.root, rel);
  }

  private async writeFile(rel: string, mode: number, body: AsyncIterable<Buffer>): Promise<void> {
    await this.ensureParent(rel);
    const path = this.abs(rel);
    const handle = await this.create(rel, () => open(path, CREATE_NEW, mode));
    this.written.set(rel, 'file');
    try {
      if (umaskAlters(mode)) await handle.chmod(mode);
      let batch: Buffer[] = [];
      let batched = 0;
      for await (const chunk of body) {
        batch.push(chunk);
        batched += chunk.length;
        if (batched < WRITE_BATCH) continue;
        await handle.writev(batch);
        batch = [];
        batched = 0;
      }
      if (batched > 0) await handle.writev(batch);
    } finally {
      await handle.close();
    }
  }

  private writeSmallFile(rel: string, mode: number, chunks: Buffer[]): void | Promise<void> {
    if (!this.realDirs.has(parentOf(rel))) return this.ensureParent(rel).then(() => this.writeSmallFile(rel, mode, chunks));
    const path = this.abs(rel);
    let fd: number;
    try {
      fd = openSync(path, CREATE_NEW, mode);
    } catch (err) {
      if (errno(err) !== 'EEXIST') throw err;
      return this.replace(rel).then(() => this.fillSmallFile(rel, mode, chunks, openSync(path, CREATE_NEW, mode)));
    }
    this.fillSmallFile(rel, mode, chunks, fd);
  }

  private fillSmallFile(rel: string, mode: number, chunks: Buffer[], fd: number): void {
    this.written.set(rel, 'file');
    try {
      if (umaskAlters(mode)) fchmodSync(fd, mode);
      writeAll(fd, chunks);
    } finally {
      closeSync(fd);
    }
  }

  private async makeDir(rel: string, mode: number): Promise<void> {
    await this.ensureParent(rel);
    const path = this.abs(rel);
    try {
      mkdirSync(path, mode); // blocking, as small files are: a directory is one quick syscall
      if (umaskAlters(mode)) chmodSync(path, mode);
    } catch (err) {
      if (errno(err) !== 'EEXIST') throw err;
      const existing = await lstat(path);
      if (!existing.isDirectory()) {
        await this.replace(rel);
        await mkdir(path, mode);
      }
      await chmod(path, mode);
    }
    this.realDirs.add(rel);
    this.written.set(rel, 'dir');
  }

  /** Links are created as written, by the rule in link-rules.ts; nothing is ever written through one (ensureParent). */
  private async makeSymlink(rel: string, target: string): Promise<void> {
    checkLinkTarget(rel, target);
    await this.ensureParent(rel);
    await this.create(rel, () => symlink(target, this.abs(rel)));
    this.written.set(rel, 'symlink');
    this.symlinks.set(rel, target);
  }

  /** GNU tar writes a second hardlink to a symlink as a hardlink entry: that is recreated as the same symlink. */
  private async makeHardlink(rel: string, linkname: string): Promise<void> {
    let target: string;
    try {
      target = safeEntryPath(linkname);
    } catch {
      throw bad(`hardlink "${rel}" points outside the tree (${linkname})`);
    }
    const kind = this.written.get(target);
    if (kind === 'symlink') return this.makeSymlink(rel, this.symlinks.get(target)!);
    if (kind !== 'file') {
      throw bad(`hardlink "${rel}" must point at a regular file or symlink extracted earlier, not "${linkname}"`);
    }
    await this.ensureParent(rel);
    await this.create(rel, () => link(this.abs(target), this.abs(rel)));
    this.written.set(rel, 'file');
  }

  /** Runs `make`; if something already sits at `rel`, removes it (never following it) and tries once more. */
  private async create<T>(rel: string, make: () => Promise<T>): Promise<T> {
    try {
      return await make();
    } catch (err) {
      if (errno(err) !== 'EEXIST') throw err;
      await this.replace(rel);
      return make();
    }
  }

  private async replace(rel: string): Promise<void> {
    await rm(this.abs(rel), { recursive: true, force: true });
    this.forget(rel);
  }

  /** Makes sure every ancestor of `rel` is a real directory, creating missing ones; refuses to pass through links. */
  private async ensureParent(rel: string): Promise<void> {
    if (this.realDirs.has(parentOf(rel))) return;
    for (const dir of ancestorsOf(rel)) {
      if (this.realDirs.has(dir)) continue;
      try {
        mkdirSync(this.abs(dir));
      } catch (err) {
        if (errno(err) !== 'EEXIST') throw err;
        this.assertRealDir(rel, dir, await lstat(this.abs(dir)));
      }
      this.realDirs.add(dir);
      this.written.set(dir, 'dir'); // touched by this layer: an opaque whiteout keeps it
    }
  }

  private assertRealDir(rel: string, dir: string, stats: Stats): void {
    if (stats.isSymbolicLink()) throw bad(`entry "${rel}" would be written through the symlink "${dir}"`);
    if (!stats.isDirectory()) throw bad(`entry "${rel}" needs "${dir}" to be a directory, but it is a file`);
  }

  /** Like ensureParent, but never creates: returns false when an ancestor (or `rel` itself if asked) is missing. */
  private async existsAsRealDirs(rel: string, dirs: string[]): Promise<boolean> {
    for (const dir of dirs) {
      if (this.realDirs.has(dir)) continue;
      const stats = await lstatOrNull(this.abs(dir));
      if (stats === null) return false;
      this.assertRealDir(rel, dir, stats);
      this.realDirs.add(dir);
    }
    return true;
  }

  private async whiteout(rel: string): Promise<void> {
    const base = baseOf(rel);
    const dir = parentOf(rel);
    if (base === OPAQUE) {
      if (await this.existsAsRealDirs(rel, [...ancestorsOf(rel)])) await this.emptyLowerLayers(dir);
      return;
    }
    const hidden = base.slice(WHITEOUT.length);
    if (hidden === '' || hidden === '.' || hidden === '..') throw bad(`whiteout "${rel}" names no file`);
    if (!(await this.existsAsRealDirs(rel, ancestorsOf(rel)))) return;
    await this.replace(dir === '' ? hidden : `${dir}/${hidden}`);
  }

  /** Removes what earlier layers put in `dir`, keeping what this layer wrote. */
  private async emptyLowerLayers(dir: string): Promise<void> {
    for (const entry of await readdir(this.abs(dir), { withFileTypes: true })) {
      const child = dir === '' ? entry.name : `${dir}/${entry.name}`;
      const kind = this.written.get(child);
      if (kind === undefined) await this.replace(child);
      else if (kind === 'dir') await this.emptyLowerLayers(child);
    }
  }

  private forget(rel: string): void {
    for (const dir of this.realDirs) if (isSameOrUnder(dir, rel)) this.realDirs.delete(dir);
    for (const path of this.written.keys()) if (isSameOrUnder(path, rel)) this.written.delete(path);
  }
}

/** Writes every chunk at once (one writev, no copy into one buffer), and again from where a short write stopped. */
function writeAll(fd: number, chunks: Buffer[]): void {
  let left = chunks;
  while (left.length > 0) {
    let written = writevSync(fd, left);
    let done = 0;
    while (done < left.length && written >= left[done]!.length) written -= left[done++]!.length;
    left = done === left.length ? [] : [left[done]!.subarray(written), ...left.slice(done + 1)];
  }
}
