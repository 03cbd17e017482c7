// The thread index-parser.ts starts for a large gallery: one parse and its reply, then the parse kept on disk, and
// the thread ends with its heap.
import { parentPort, workerData } from 'node:worker_threads';
import { keep, type KeptParse } from './parse-cache.ts';
import { parseGalleryIndex, type ParsedIndex } from './parse.ts';
import type { IndexSource } from './types.ts';

const { text, source, keepAs } = workerData as { text: string; source: IndexSource; keepAs?: KeptParse };
let parsed: ParsedIndex | null = null;
try {
  parsed = parseGalleryIndex(text, source);
} catch (error) {
  parentPort!.postMessage({ error: (error as Error).message });
}
if (parsed) {
  parentPort!.postMessage({ parsed });
  if (keepAs) void keep(keepAs, parsed);
}
