// What an installed tree may hold, and the running tally that enforces it while a tree is written, whichever source
// (archive, OCI layers, local directory) it comes from.
import { HangarError } from '../../../shared/errors.ts';

export interface ExtractLimits {
  maxEntries: number;
  /** What the whole tree may take on disk. */
  maxBytes: number;
  /** How many times the bytes read a gzipped archive may inflate to (see RatioWatch). */
  maxRatio: number;
}

/** Room for the largest real backends (multi-GB CUDA builds compress about 2-4x). */
export const DEFAULT_LIMITS: ExtractLimits = { maxEntries: 200_000, maxBytes: 32 * 1024 ** 3, maxRatio: 100 };
/** Small archives may be as compressible as they like: a whole archive's ratio says little below this size. */
const RATIO_FLOOR = 64 * 1024 ** 2;
/**
 * While an archive is still being read, it may inflate this much more than the ratio allows for what was read so
 * far: a sparse head (say 300 MiB of zeros before the real data) is then judged together with the data after it,
 * however fast the source delivers (a download's compressed bytes arrive no faster than they inflate), and a bomb is
 * still cut off long before it fills a disk.
 */
const SPARSE_HEAD_MAX = 384 * 1024 ** 2;

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

/**
 * Watches one gzipped archive for a compression bomb by the bytes actually inflated against the compressed bytes
 * actually read (never by the sizes entries declare: a large file at an archive's start says nothing of its
 * compression). Real backends compress 2-4x.
 */
export class RatioWatch {
  private compressed = 0;
  private inflated = 0;

  constructor(private readonly maxRatio: number) {}

  /** The compressed bytes read so far. */
  readTo(bytes: number): void {
    this.compressed = bytes;
  }

  /** The bytes inflated so far: throws once they run more than a sparse head's worth ahead of what was read. */
  inflatedTo(bytes: number): void {
    this.inflated = bytes;
    if (this.inflated > this.maxRatio * this.compressed + SPARSE_HEAD_MAX) this.refuse(' so far');
  }

  /** After the whole archive is read: throws when it expanded more than the ratio overall. */
  finish(): void {
    if (this.inflated > RATIO_FLOOR && this.inflated > this.maxRatio * this.compressed) this.refuse('');
  }

  private refuse(soFar: string): never {
    const { inflated, compressed, maxRatio } = this;
    throw refused(`archive expands more than ${maxRatio} times its compressed size (${sizeText(inflated)} from ${sizeText(compressed)}${soFar}): refused as a compression bomb`);
  }
}
