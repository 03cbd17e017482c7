// How an index text becomes its entries. Parsing a large gallery grows V8's young generation (LocalAI's index: to
// 32 MB of semi-spaces), and V8 keeps what it grew to for the rest of the process: the agent, or the app's main
// process, stayed 25 MB larger for good. A large index is parsed in a short-lived worker thread instead, whose heap
// goes away when it ends; only the parse comes back.
import { Worker } from 'node:worker_threads';
import { HangarError } from '../../../shared/errors.ts';
import { keep, keptParse, readKept, type KeptParse } from './parse-cache.ts';
import { parseGalleryIndex, type ParsedIndex } from './parse.ts';
import type { IndexSource } from './types.ts';

export type IndexParser = (text: string, source: IndexSource) => Promise<ParsedIndex>;

/**
 * From this size on, a parse goes to a worker. A worker leaves some 10 MB behind whatever the size (its thread's malloc
 * arena) and takes 100 ms or more to start; a parse here grows the process about as much at 64 KiB (3 MB at 16 KiB,
 * 30 MB at LocalAI's 282 KiB), and has a small index ready sooner.
 */
const WORKER_FROM_CHARS = 64 * 1024;

type Reply = { parsed: ParsedIndex } | { error: string };

/** Reads what an earlier parse of the same text kept in `dir` (see parse-cache.ts), and keeps what it parses. */
export function cachedParser(dir: string): IndexParser {
  return async (text, source) => {
    const kept = keptParse(dir, text, source);
    return readKept(kept) ?? parseIndex(text, source, kept);
  };
}

/** The worker keeps its parse itself: turned into JSON here, it would grow this heap again. */
export async function parseIndex(text: string, source: IndexSource, keepAs?: KeptParse): Promise<ParsedIndex> {
  // A worker that could not start or ended without a reply (no memory for a thread): parsed here, as a small index is.
  const reply = text.length >= WORKER_FROM_CHARS ? await inWorker(text, source, keepAs) : null;
  if (reply && 'error' in reply) throw new HangarError('bad-input', reply.error);
  if (reply) return reply.parsed;
  const parsed = parseGalleryIndex(text, source);
  if (keepAs) void keep(keepAs, parsed);
  return parsed;
}

function inWorker(text: string, source: IndexSource, keepAs: KeptParse | undefined): Promise<Reply | null> {
  return new Promise((resolve) => {
    let worker: Worker;
    try {
      const { script, evaluated } = workerScript();
      worker = new Worker(script, { eval: evaluated, workerData: { text, source, keepAs } });
    } catch {
      return resolve(null);
    }
    worker.once('message', resolve);
    worker.once('error', () => resolve(null));
    worker.once('exit', () => resolve(null));
  });
}

/**
 * A bundle (dist/agent, dist/electron) has the worker's script beside it (scripts/build.mjs). From the sources (tests,
 * through tsx) it is parse-worker.ts, which a worker can load only once it registered tsx itself: tsx's hooks stay in
 * the thread that imported them.
 */
function workerScript(): { script: string | URL; evaluated: boolean } {
  if (!import.meta.url.endsWith('.ts')) return { script: new URL('./gallery-parse-worker.cjs', import.meta.url), evaluated: false };
  const worker = JSON.stringify(new URL('./parse-worker.ts', import.meta.url).href);
  return { script: `import('tsx/esm/api').then(({ register }) => { register(); return import(${worker}); });`, evaluated: true };
}
