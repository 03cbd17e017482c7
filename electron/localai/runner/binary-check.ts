// Why a LocalAI binary cannot be run, said before it is spawned: spawn's own error is a bare errno ("spawn /x ENOENT").
import { access, constants, stat } from 'node:fs/promises';
import { HangarError } from '../../../shared/errors.ts';

/** `how`: where the path came from, for the user to change it ("hangar agent --localai-bin"). */
export async function binaryProblem(path: string, how: string): Promise<HangarError | null> {
  let isDirectory: boolean;
  try {
    isDirectory = (await stat(path)).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return new HangarError('not-found', `there is no LocalAI binary at ${path} (${how})`);
    return new HangarError('forbidden', `${path} cannot be looked at (${how}): ${code === 'EACCES' ? 'permission denied' : (code ?? 'unknown error')}`);
  }
  if (isDirectory) return new HangarError('bad-input', `${path} is a directory, not an executable file (${how})`);
  try {
    await access(path, constants.X_OK);
  } catch {
    return new HangarError('bad-input', `${path} is not executable (${how}): chmod +x ${path}`);
  }
  return null;
}
