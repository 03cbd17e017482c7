// Reading a small file another program placed (LocalAI, an image, a person): only when it is a regular file of a sane
// size. Opening a FIFO to read waits for a writer that may never come, holding one of the few threads every file
// operation of the node needs, and a device such as /dev/zero never ends.
import { closeSync, constants, fstatSync, openSync, readFileSync, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import { HangarError } from '../../shared/errors.ts';

/** Without blocking, a FIFO opens at once, and its stats tell what it is before anything is read. */
const OPEN_TO_READ = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

export interface PlacedFileRule {
  maxBytes: number;
  /** Says a file of `size` bytes is too large: "it is 64.0 MiB, more than … holds". */
  tooLarge(size: number): string;
}

function refusal(stats: Stats, rule: PlacedFileRule): HangarError | null {
  if (!stats.isFile()) {
    const kind = stats.isFIFO() ? 'a FIFO' : stats.isSocket() ? 'a socket' : stats.isDirectory() ? 'a directory' : 'a device';
    return new HangarError('bad-input', `it is ${kind}, not a file`);
  }
  return stats.size > rule.maxBytes ? new HangarError('bad-input', rule.tooLarge(stats.size)) : null;
}

/** The file's text; a file that is not a regular one within the rule's size throws a HangarError saying why. */
export function readPlacedFileSync(path: string, rule: PlacedFileRule): string {
  const fd = openSync(path, OPEN_TO_READ);
  try {
    const refused = refusal(fstatSync(fd), rule);
    if (refused) throw refused;
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

export async function readPlacedFile(path: string, rule: PlacedFileRule): Promise<string> {
  const handle = await open(path, OPEN_TO_READ);
  try {
    const refused = refusal(await handle.stat(), rule);
    if (refused) throw refused;
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}
