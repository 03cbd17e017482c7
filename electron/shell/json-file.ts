// Small JSON files in userData (window state, settings): validated on read, written atomically and debounced.
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type * as z from 'zod';
import { warnWriteFailed, writeFileAtomicSync } from '../core/state-file.ts';

/** The file's content when it is present and valid; otherwise `fallback` (a missing or corrupt file is not fatal). */
export function readJson<T>(path: string, schema: z.ZodType<T>, fallback: T): T {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
  try {
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : fallback;
  } catch {
    return fallback;
  }
}

/**
 * Whole or not at all (see state-file.ts: a failure throws and leaves no temporary file); readable by its owner
 * only, since a settings file may hold a cluster password.
 */
export function writeJson(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileAtomicSync(path, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
}

export interface DebouncedWriter<T> {
  /** Schedules a write of `value`; later calls within the delay replace it. */
  schedule(value: T): void;
  /** Writes a pending value now (on quit). */
  flush(): void;
}

/** For what the app can do without (the window's place): a write that fails is said once, never thrown. */
export function debouncedWriter<T>(path: string, delayMs: number): DebouncedWriter<T> {
  let pending: { value: T } | null = null;
  let timer: NodeJS.Timeout | null = null;
  let failing = false;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (!pending) return;
    try {
      writeJson(path, pending.value);
      failing = false;
    } catch (error) {
      if (!failing) warnWriteFailed(error as Error);
      failing = true;
    }
    pending = null;
  };
  return {
    schedule(value) {
      pending = { value };
      if (timer) clearTimeout(timer);
      timer = setTimeout(flush, delayMs);
      timer.unref();
    },
    flush,
  };
}
