// A JSON file of a home's that only its owner may read (the cluster's keys, a membership): missing is null, damaged is
// one line saying what to do, and it is written whole or not at all, mode 600.
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type * as z from 'zod';
import { writeFileAtomic } from '../core/state-file.ts';
import { HangarError } from '../../shared/errors.ts';

export async function readOwnerJson<T>(file: string, schema: z.ZodType<T>, damaged: string): Promise<T | null> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  if (text === null) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new HangarError('bad-input', `${file} is damaged: ${damaged}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new HangarError('bad-input', `${file} is damaged: ${damaged}`);
  return parsed.data;
}

export async function writeOwnerJson(file: string, value: unknown): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  await writeFileAtomic(file, JSON.stringify(value, null, 2) + '\n', { mode: 0o600 });
}
