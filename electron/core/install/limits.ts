// What an installed tree may hold, and the running tally that enforces it while a tree is written, whichever source
// (archive, OCI layers, local directory) it comes from.
import { HangarError } from '../../../shared/errors.ts';

export interface ExtractLimits {
  maxEntries: number;
  /** What the whole tree may take on disk. */
  maxBytes: number;
  /** How many times its compressed size a gzipped archive may expand to (past RATIO_FLOOR bytes). */
  maxRatio: number;
}

/** Room for the largest real backends (multi-GB CUDA builds compress about 2-4x). */
export const DEFAULT_LIMITS: ExtractLimits = { maxEntries: 200_000, maxBytes: 32 * 1024 ** 3, maxRatio: 100 };
/** Small archives may be as compressible as they like: a ratio says little below this size. */
const RATIO_FLOOR = 64 * 1024 ** 2;

export function sizeText(bytes: number): string {
  return bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(1)} GiB` : `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

/** Parses a size as users write it: `500M`, `32G`, `1.5T`, or plain bytes. */
export function parseSize(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?$/i.exec(text.trim());
  if (!match) throw new HangarError('bad-input', `"${text}" is not a size (e.g. 500M, 32G)`);
  const power = ' KMGT'.indexOf(match[2]!.toUpperCase() || ' ');
  const bytes = Math.floor(Number(match[1]) * 1024 ** power);
  if (bytes <= 0) throw new HangarError('bad-input', `"${text}" is not a size greater than zero`);
  return bytes;
}

function refused(message: string): HangarError {
  return new HangarError('bad-input', message);
}

/** Counts a tree's entries and bytes as they are written, across every archive or layer it comes from. */
export class TreeTally {
  entries = 0;
  bytes = 0;

  constructor(
    /** Names the tree in errors: "archive", or the directory copied. */
    private readonly what: string,
    readonly limits: ExtractLimits,
  ) {}

  /** Counts one more entry of `size` bytes; throws when the tree grows past a limit. */
  add(size: number): void {
    const { maxEntries, maxBytes } = this.limits;
    if (++this.entries > maxEntries) throw refused(`${this.what} holds more than ${maxEntries} entries, the install entry limit`);
    this.bytes += size;
    if (this.bytes > maxBytes) throw refused(`${this.what} holds more than ${sizeText(maxBytes)}, the install size limit`);
  }
}

/** Throws when one gzipped archive has expanded to far more than real backends do. */
export function checkRatio(expanded: number, compressed: number, maxRatio: number): void {
  if (expanded > RATIO_FLOOR && expanded > maxRatio * compressed) {
    throw refused(`archive expands more than ${maxRatio} times its compressed size (${sizeText(expanded)} from ${sizeText(compressed)} so far): refused as a compression bomb`);
  }
}
