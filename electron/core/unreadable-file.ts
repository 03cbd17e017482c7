import { HangarError } from '../../shared/errors.ts';

/**
 * Why a file the user named cannot be read, in words rather than an errno: "the token file /x does not exist". WHAT
 * names the file as the sentence should ("the token file /x").
 */
export function unreadableFile(what: string, error: NodeJS.ErrnoException): HangarError {
  const words: Record<string, string> = {
    ENOENT: `${what} does not exist`,
    ENOTDIR: `${what} does not exist: a part of its path is a file, not a directory`,
    EISDIR: `${what} is a directory, not a file`,
    EACCES: `cannot read ${what}: permission denied`,
    EPERM: `cannot read ${what}: permission denied`,
  };
  return new HangarError('bad-input', words[error.code ?? ''] ?? `cannot read ${what}: ${error.code ?? error.message}`);
}
