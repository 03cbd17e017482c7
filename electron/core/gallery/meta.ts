// Meta backends: an entry with `capabilities` and no `uri` stands for one concrete build per machine capability.
import type { GalleryEntry } from './types.ts';

export function isMeta(entry: GalleryEntry): boolean {
  return entry.uri === null && entry.capabilities !== null && Object.keys(entry.capabilities).length > 0;
}

/**
 * The capabilities key to use for `capability`, and the backend it names. Tried in order: the capability itself,
 * its vendor-level parent for a CUDA refinement (nvidia-cuda-13 -> nvidia, nvidia-l4t-cuda-12 -> nvidia-l4t),
 * then LocalAI's own catch-alls `default` and `cpu`. Null when none of them is in the map.
 */
export function resolveMetaKey(capabilities: Record<string, string>, capability: string): { key: string; target: string } | null {
  const candidates = [capability, capability.replace(/-cuda-\d+$/, ''), 'default', 'cpu'];
  for (const key of candidates) {
    const target = Object.hasOwn(capabilities, key) ? capabilities[key] : undefined;
    if (target) return { key, target };
  }
  return null;
}
