// Pure path rules shared by the extractor and the directory copier: what a safe, in-tree relative path is.
import { HangarError } from '../../../shared/errors.ts';

/** Splits on both separators so a name crafted for Windows cannot slip a `..` past a posix check. */
export function segmentsOf(path: string): string[] {
  return path.split(/[\\/]+/).filter((s) => s !== '' && s !== '.');
}

export function isAbsolutePath(path: string): boolean {
  return /^[\\/]/.test(path) || /^[A-Za-z]:/.test(path);
}

/** Normalizes an archive entry name to a relative posix path ('' is the root), or throws for `..`/absolute names. */
export function safeEntryPath(name: string): string {
  if (name.includes('\0')) throw new HangarError('bad-input', `entry name holds a NUL byte: ${JSON.stringify(name)}`);
  if (isAbsolutePath(name)) throw new HangarError('bad-input', `entry "${name}" has an absolute path`);
  const segments = segmentsOf(name);
  if (segments.includes('..')) throw new HangarError('bad-input', `entry "${name}" climbs out of the tree with ".."`);
  return segments.join('/');
}

/**
 * Resolves a symlink `target` lexically from the link at relative path `linkPath`.
 * Returns the in-tree relative path it names, or null when it leaves the tree (or is absolute).
 */
export function resolveLinkLexically(linkPath: string, target: string): string | null {
  if (isAbsolutePath(target)) return null;
  const stack = segmentsOf(linkPath).slice(0, -1);
  for (const segment of segmentsOf(target)) {
    if (segment !== '..') stack.push(segment);
    else if (stack.pop() === undefined) return null;
  }
  return stack.join('/');
}

export function parentOf(relPath: string): string {
  const slash = relPath.lastIndexOf('/');
  return slash < 0 ? '' : relPath.slice(0, slash);
}

export function baseOf(relPath: string): string {
  return relPath.slice(relPath.lastIndexOf('/') + 1);
}

/** Every proper prefix of a relative path, shortest first: 'a/b/c' -> ['a', 'a/b']. */
export function ancestorsOf(relPath: string): string[] {
  const parts = relPath.split('/');
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('/'));
}

export function isSameOrUnder(path: string, prefix: string): boolean {
  return prefix === '' || path === prefix || path.startsWith(prefix + '/');
}
