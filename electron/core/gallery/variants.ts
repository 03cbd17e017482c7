// The builds a meta backend lists, which one this node installs and why, for the gallery's variant picker.
import type { MetaResolution, MetaVariant } from '../../../shared/types.ts';
import { capabilityKey, isEntryCompatible } from './meta.ts';
import type { GalleryEntry } from './types.ts';

const capabilityNames: Record<string, string> = {
  default: 'no GPU to serve from, CPU build',
  cpu: 'CPU build',
  nvidia: 'NVIDIA GPU',
  'nvidia-cuda-12': 'NVIDIA GPU, CUDA 12 toolkit',
  'nvidia-cuda-13': 'NVIDIA GPU, CUDA 13 toolkit',
  'nvidia-l4t': 'NVIDIA Jetson (L4T)',
  'nvidia-l4t-cuda-12': 'NVIDIA Jetson (L4T), CUDA 12 toolkit',
  'nvidia-l4t-cuda-13': 'NVIDIA Jetson (L4T), CUDA 13 toolkit',
  amd: 'AMD GPU (ROCm)',
  intel: 'Intel GPU (SYCL)',
  vulkan: 'Vulkan GPU',
  metal: 'Apple silicon (Metal)',
  'metal-darwin-arm64': 'Apple silicon (Metal)',
  'darwin-x86': 'Intel Mac',
};

export function describeCapability(capability: string): string {
  return capabilityNames[capability] ?? capability;
}

export interface VariantInput {
  meta: GalleryEntry;
  /** This node's capability. */
  capability: string;
  /** The key the user picked on this node, if any. */
  picked: string | null;
  /** The first entry named `name` in gallery order. */
  byName(name: string): GalleryEntry | null;
  /** The concrete build installed for this meta, if any. */
  installedAs: string | null;
}

export function metaResolution({ meta, capability, picked, byName, installedAs }: VariantInput): MetaResolution {
  const capabilities = meta.capabilities ?? {};
  const variants: MetaVariant[] = Object.entries(capabilities).map(([key, backend]) => {
    const entry = byName(backend);
    return { capability: key, backend, compatible: entry !== null && isEntryCompatible(entry, capability) };
  });
  const usable = (key: string | null) => variants.find((v) => v.capability === key && v.compatible) ?? null;
  const chosen = usable(picked);
  if (chosen) {
    return { resolves: chosen.backend, capability: chosen.capability, reason: `${chosen.capability}: picked on this node`, picked: true, variants, installedAs };
  }
  const auto = usable(capabilityKey(capabilities, capability));
  return {
    resolves: auto?.backend ?? null,
    capability: auto?.capability ?? null,
    reason: autoReason(auto?.capability ?? null, capability),
    picked: false,
    variants,
    installedAs,
  };
}

function autoReason(key: string | null, capability: string): string {
  const machine = `this machine is ${capability} (${describeCapability(capability)})`;
  if (key === null) return `no build runs here: ${machine}`;
  if (key === capability) return `${key}: ${describeCapability(key)}`;
  return `${key}: no ${capability} build, so the ${key} one (${machine})`;
}
