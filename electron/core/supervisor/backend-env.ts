// What LocalAI puts in a backend's environment beyond the host's, so a backend behaves the same under Hangar
// (LocalAI: pkg/model/initializers.go for the Hugging Face caches, pkg/model/process.go for Vulkan ICDs,
// pkg/grpc/parentwatch.go and backend/python/common/parent_watch.py for the parent watch).
import { readdir } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

const HF_CACHE_VARS = ['HF_HOME', 'TRANSFORMERS_CACHE', 'HUGGINGFACE_HUB_CACHE'] as const;

/** The part every backend of this host gets alike. */
export function hostBackendEnv(modelsDir: string, inherited: NodeJS.ProcessEnv = process.env): Record<string, string> {
  // LocalAI's backends exit when their parent dies unless told not to; Hangar's reaper owns that job, and a kept
  // backend must outlive the host to be re-adopted.
  const env: Record<string, string> = { LOCALAI_BACKEND_PARENT_WATCH: 'false' };
  // As LocalAI: model downloads go to the models path unless the user chose a cache.
  for (const name of HF_CACHE_VARS) if (!inherited[name]) env[name] = modelsDir;
  return env;
}

/** The part a backend's own directory adds (none for most). */
export async function directoryEnv(dir: string): Promise<Record<string, string>> {
  const icds = await vulkanManifests(dir);
  // VK_DRIVER_FILES for current loaders, VK_ICD_FILENAMES (its old name) for the ones a backend may bundle.
  return icds.length > 0 ? { VK_DRIVER_FILES: icds.join(delimiter), VK_ICD_FILENAMES: icds.join(delimiter) } : {};
}

/** The ICD manifests a backend bundles in `vulkan/icd.d/*.json`. */
async function vulkanManifests(dir: string): Promise<string[]> {
  const icdDir = join(dir, 'vulkan', 'icd.d');
  const entries = await readdir(icdDir, { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => !e.isDirectory() && e.name.endsWith('.json')).map((e) => join(icdDir, e.name));
}
