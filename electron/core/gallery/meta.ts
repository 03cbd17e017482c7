// Meta backends and hardware compatibility, decided exactly as LocalAI decides them (pkg/system/capabilities.go
// Capability and IsBackendCompatible, core/gallery/backend_types.go IsCompatibleWith and FindBestBackendFromMeta).
import type { GalleryEntry } from './types.ts';

/** LOCALAI_FORCE_META_BACKEND_CAPABILITY=disable turns the compatibility filter off. */
export const DISABLE_CAPABILITY = 'disable';

export function isMeta(entry: GalleryEntry): boolean {
  return entry.uri === null && entry.capabilities !== null && Object.keys(entry.capabilities).length > 0;
}

/**
 * The capabilities key LocalAI uses for `capability`: the capability itself when the map has it, else `default`,
 * else `cpu`. Null when none of them is a key (LocalAI then looks up `default` and finds nothing).
 */
export function capabilityKey(capabilities: Record<string, string>, capability: string): string | null {
  for (const key of [capability, 'default', 'cpu']) if (Object.hasOwn(capabilities, key) && capabilities[key]) return key;
  return null;
}

/** The capabilities key for `capability` and the backend it names, or null when the meta has no build for it. */
export function resolveMetaKey(capabilities: Record<string, string>, capability: string): { key: string; target: string } | null {
  const key = capabilityKey(capabilities, capability);
  return key === null ? null : { key, target: capabilities[key]! };
}

/**
 * Whether a concrete backend runs on a machine of `capability`, judged by the build tokens in its name and uri:
 * darwin/mlx/metal builds need a Mac, l4t builds an NVIDIA Jetson, cuda/nvidia builds any NVIDIA capability,
 * rocm/hip/amd builds `amd`, sycl/intel builds `intel`; anything else is a CPU build and runs everywhere.
 */
export function isBackendCompatible(name: string, uri: string | null, capability: string): boolean {
  if (capability === DISABLE_CAPABILITY) return true;
  const combined = `${name} ${uri ?? ''}`.toLowerCase();
  const has = (...tokens: string[]) => tokens.some((token) => combined.includes(token));
  if (has('darwin', 'mlx', 'metal')) return capability === 'metal' || capability === 'darwin-x86';
  if (has('l4t')) return capability.startsWith('nvidia-l4t');
  if (has('cuda', 'nvidia')) return capability.startsWith('nvidia');
  if (has('rocm', 'hip', 'amd')) return capability === 'amd';
  if (has('sycl', 'intel')) return capability === 'intel';
  return true;
}

/** A meta is compatible when its map has a key for this capability (or a catch-all); a concrete by its tokens. */
export function isEntryCompatible(entry: GalleryEntry, capability: string): boolean {
  if (capability === DISABLE_CAPABILITY) return true;
  if (isMeta(entry)) return capabilityKey(entry.capabilities!, capability) !== null;
  return isBackendCompatible(entry.name, entry.uri, capability);
}

// Build tags LocalAI prefers, per capability prefix, when several installed builds share one alias.
const buildTagPreference: [prefix: string, tokens: string[]][] = [
  ['nvidia', ['cuda', 'vulkan', 'cpu']],
  ['amd', ['rocm', 'hip', 'vulkan', 'cpu']],
  ['intel', ['sycl', 'intel', 'cpu']],
  ['metal', ['metal', 'cpu']],
  ['darwin-x86', ['darwin-x86', 'cpu']],
  ['vulkan', ['vulkan', 'cpu']],
];

/** LocalAI's build tags for `capability`, best first (SystemState.BackendPreferenceTokens): matched by capability prefix. */
export function buildPreferenceTokens(capability: string): string[] {
  const lower = capability.toLowerCase();
  return buildTagPreference.find(([prefix]) => lower.startsWith(prefix))?.[1] ?? ['cpu'];
}

/** Which of the installed builds sharing an alias LocalAI runs: the first to match a preferred tag, else the first. */
export function preferredBuild(candidates: string[], capability: string): string | null {
  for (const token of buildPreferenceTokens(capability)) {
    const match = candidates.find((name) => name.toLowerCase().includes(token));
    if (match) return match;
  }
  return candidates[0] ?? null;
}
