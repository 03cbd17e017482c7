// Pure path rules shared by the extractor and the directory copier: what a safe, in-tree relative path is.
// Names are kept exactly as written. On Linux and macOS only '/' separates, so `back\slash.txt` and `c:weird.txt`
// are ordinary names there; Windows cannot hold them, so a Windows host refuses them and says why.
import { HangarError } from '../../../shared/errors.ts';

export type PathFlavor = 'posix' | 'windows';

const HOST_FLAVOR: PathFlavor = process.platform === 'win32' ? 'windows' : 'posix';
/** What a Windows file name may not hold: these characters, and control characters. */
const WINDOWS_FORBIDDEN = /[\\:*?"<>|]|[^ -\uffff]/;

export function segmentsOf(path: string, flavor: PathFlavor = HOST_FLAVOR): string[] {
  return path.split(flavor === 'windows' ? /[\\/]/ : '/').filter((s) => s !== '' && s !== '.');
}

export function isAbsolutePath(path: string, flavor: PathFlavor = HOST_FLAVOR): boolean {
  return flavor === 'windows' ? /^[\\/]/.test(path) || /^[A-Za-z]:/.test(path) : path.startsWith('/');
}

function bad(message: string): HangarError {
  return new HangarError('bad-input', message);
}

/** An archive entry name as a relative posix path ('' is the root), or a refusal for `..`, absolute or unholdable names. */
export function safeEntryPath(name: string, flavor: PathFlavor = HOST_FLAVOR): string {
  if (name.includes('\0')) throw bad(`entry name holds a NUL byte: ${JSON.stringify(name)}`);
  const forbidden = flavor === 'windows' ? WINDOWS_FORBIDDEN.exec(name)?.[0] : undefined;
  if (forbidden !== undefined) throw bad(`entry "${name}" holds ${JSON.stringify(forbidden)}, which a Windows file name cannot hold`);
  if (isAbsolutePath(name, flavor)) throw bad(`entry "${name}" has an absolute path`);
  const segments = segmentsOf(name, 'posix');
  if (segments.includes('..')) throw bad(`entry "${name}" climbs out of the tree with ".."`);
  return segments.join('/');
}

/** A name this file system cannot hold (ENAMETOOLONG) is the source's fault: said as such, the name cut short. */
export function nameTooLong(err: unknown, name: string): unknown {
  if ((err as NodeJS.ErrnoException | null)?.code !== 'ENAMETOOLONG') return err;
  const shown = name.length > 60 ? `${name.slice(0, 60)}…` : name;
  return bad(`entry "${shown}" (${Buffer.byteLength(name)} bytes) is a longer name than this file system holds`);
}

/**
 * Resolves a symlink `target` lexically from the link at relative path `linkPath`.
 * Returns the in-tree relative path it names, or null when it leaves the tree (or is absolute).
 */
export function resolveLinkLexically(linkPath: string, target: string, flavor: PathFlavor = HOST_FLAVOR): string | null {
  if (isAbsolutePath(target, flavor)) return null;
  const stack = segmentsOf(linkPath, 'posix').slice(0, -1);
  for (const segment of segmentsOf(target, flavor)) {
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
