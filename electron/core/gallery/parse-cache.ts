// Parsing LocalAI's index (about 1,000 entries of YAML with anchors and merge keys) costs a few hundred ms of CPU at
// every agent start, for a text that rarely changes. The parse of each text is kept on disk, named by the SHA-256 of
// the text and where it came from, and read back (a JSON.parse) the next time the same text is read.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../state-file.ts';
import { parseGalleryIndex } from './parse.ts';
import type { IndexSource } from './types.ts';

export type IndexParser = typeof parseGalleryIndex;

/** Bumped whenever parseGalleryIndex's output changes shape or meaning: a parse kept by another format is not used. */
const FORMAT = 1;
/** The last parses kept: one per gallery text in use, and a few before. */
const KEPT = 16;

export function cachedParser(dir: string): IndexParser {
  return (text, source) => {
    const file = join(dir, `${keyOf(text, source)}.json`);
    const kept = readKept(file);
    if (kept) return kept;
    const parsed = parseGalleryIndex(text, source);
    void keep(dir, file, parsed);
    return parsed;
  };
}

function keyOf(text: string, source: IndexSource): string {
  return createHash('sha256').update(JSON.stringify([FORMAT, source])).update('\0').update(text).digest('hex');
}

function readKept(file: string): ReturnType<IndexParser> | null {
  try {
    const kept = JSON.parse(readFileSync(file, 'utf8')) as { entries?: unknown; errors?: unknown };
    return Array.isArray(kept.entries) && Array.isArray(kept.errors) ? (kept as ReturnType<IndexParser>) : null;
  } catch {
    return null;
  }
}

async function keep(dir: string, file: string, parsed: ReturnType<IndexParser>): Promise<void> {
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
