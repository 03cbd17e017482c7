// Which backend directory LocalAI runs for the name a model's config gives, as its loader resolves it
// (pkg/model/initializers.go backendLoader): the name lower-cased, then its alias map, then the run file LocalAI
// registered under that name (core/gallery/backends.go RegisterBackends: a backend's own name, a meta backend's name
// for its concrete build, and a backend's `alias` from its metadata.json).
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readMetadataTextSync } from '../../core/install/index.ts';
import { placeOf } from '../../core/supervisor/index.ts';

/** pkg/model/initializers.go `Aliases`: old names LocalAI still takes for these backends. */
const LOCALAI_ALIASES: Readonly<Record<string, string>> = {
  'go-llama': 'llama-cpp',
  llama: 'llama-cpp',
  'embedded-store': 'local-store',
  'huggingface-embeddings': 'transformers',
  'transformers-musicgen': 'transformers',
  sentencetransformers: 'transformers',
  mamba: 'transformers',
  stablediffusion: 'stablediffusion-ggml',
};

/** The name LocalAI's loader looks up for a config's `backend:` value. */
export function loaderName(configured: string): string {
  const lower = configured.toLowerCase();
  return LOCALAI_ALIASES[lower] ?? lower;
}

/** The directory LocalAI runs for a config's backend name: its own, a meta's build, or the backend whose alias it is. */
export function concreteBackend(backendsDir: string, configured: string): string {
  const name = loaderName(configured);
  if (existsSync(join(backendsDir, name, 'run.sh'))) return name;
  const meta = metadata(backendsDir, name).meta_backend_for;
  if (typeof meta === 'string' && meta) return meta;
  return installed(backendsDir).find((dir) => metadata(backendsDir, dir).alias === name) ?? name;
}

/** The live backend directories (those with a run.sh). */
export function installed(backendsDir: string): string[] {
  let names: string[] = [];
  try {
    names = readdirSync(backendsDir);
  } catch {
    return [];
  }
  return names.filter((name) => !name.startsWith('.') && !placeOf(name).aside && existsSync(join(backendsDir, name, 'run.sh'))).sort();
}

export function metadata(backendsDir: string, dir: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(readMetadataTextSync(join(backendsDir, dir))) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
