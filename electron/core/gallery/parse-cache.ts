// Parsing LocalAI's index (about 1,000 entries of YAML with anchors and merge keys) costs a few hundred ms of CPU at
// every agent start, for a text that rarely changes. The parse of each text is kept on disk, named by the SHA-256 of
// the text and where it came from, and read back (a JSON.parse) the next time the same text is read.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../state-file.ts';
import type { ParsedIndex } from './parse.ts';
import type { IndexSource } from './types.ts';

/** Bumped whenever the parse's output changes shape or meaning: a parse kept by another format is not used. */
const FORMAT = 1;
/** The last parses kept: one per gallery text in use, and a few before. */
const KEPT = 16;

/** Where the parse of one text is kept: `file`, in the folder `dir` of kept parses. */
export interface KeptParse {
  dir: string;
  file: string;
}

export function keptParse(dir: string, text: string, source: IndexSource): KeptParse {
  const key = createHash('sha256').update(JSON.stringify([FORMAT, source])).update('\0').update(text).digest('hex');
  return { dir, file: join(dir, `${key}.json`) };
}

export function readKept({ file }: KeptParse): ParsedIndex | null {
  try {
    const kept = JSON.parse(readFileSync(file, 'utf8')) as { entries?: unknown; errors?: unknown };
    return Array.isArray(kept.entries) && Array.isArray(kept.errors) ? (kept as ParsedIndex) : null;
  } catch {
    return null;
  }
}

export async function keep({ dir, file }: KeptParse, parsed: ParsedIndex): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
    await writeFileAtomic(file, JSON.stringify(parsed));
    const names = (await readdir(dir)).filter((f) => f.endsWith('.json'));
    const files = await Promise.all(names.map(async (f) => ({ f, at: (await stat(join(dir, f))).mtimeMs })));
    await Promise.all(files.sort((a, b) => b.at - a.at).slice(KEPT).map(({ f }) => rm(join(dir, f), { force: true })));
  } catch {
    // A cache that cannot be written only costs the next start its parse.
  }
}
