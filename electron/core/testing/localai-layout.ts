// A backends directory written the way LocalAI writes it (core/gallery/backends.go InstallBackend,
// InstallBackendFromGallery): metadata.json with the keys of its Go struct in their order, two-space indent, no
// newline; directories 0750; a meta directory holding only metadata.json.
import { chmod, cp, mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

/** The built echo backend (`npm run build`): it serves LocalAI's gRPC protocol. */
const BUILT_ECHO = resolve('dist/backends/echo');

/** LocalAI's BackendMetadata, by its JSON tags. */
export interface LocalAiMetadata {
  alias?: string;
  meta_backend_for?: string;
  name?: string;
  gallery_url?: string;
  installed_at?: string;
  version?: string;
  uri?: string;
  digest?: string;
}

const GO_ORDER: (keyof LocalAiMetadata)[] = ['alias', 'meta_backend_for', 'name', 'gallery_url', 'installed_at', 'version', 'uri', 'digest'];
export const LOCALAI_GALLERY_URL = 'github:mudler/LocalAI/backend/index.yaml@master';
const INSTALLED_AT = '2026-08-22T22:44:03+02:00';

/** echo: a copy of the built echo backend (it serves LocalAI's gRPC protocol); script: a run.sh that exits. */
export type RunShKind = 'echo' | 'script' | 'none' | 'directory';

export interface LocalAiDir {
  /** The metadata LocalAI writes, raw text for a file LocalAI cannot read, or null for none. */
  metadata: LocalAiMetadata | string | null;
  runSh: RunShKind;
  /** run.sh's mode (default 0755). */
  mode?: number;
}

export function goMetadataJson(metadata: LocalAiMetadata): string {
  return JSON.stringify(Object.fromEntries(GO_ORDER.filter((k) => metadata[k]).map((k) => [k, metadata[k]])), null, 2);
}

export async function writeLocalAiDir(backendsDir: string, name: string, spec: LocalAiDir): Promise<string> {
  const dir = join(backendsDir, name);
  if (spec.runSh === 'echo') await cp(BUILT_ECHO, dir, { recursive: true });
  await mkdir(dir, { recursive: true, mode: 0o750 });
  if (spec.runSh === 'script') await writeFile(join(dir, 'run.sh'), '#!/bin/sh\nexit 0\n', { mode: spec.mode ?? 0o755 });
  if (spec.runSh === 'directory') await mkdir(join(dir, 'run.sh'));
  if (spec.runSh === 'echo' && spec.mode !== undefined) await chmod(join(dir, 'run.sh'), spec.mode);
  if (spec.metadata !== null) {
    await writeFile(join(dir, 'metadata.json'), typeof spec.metadata === 'string' ? spec.metadata : goMetadataJson(spec.metadata), { mode: 0o644 });
  }
  return dir;
}

/** A concrete build as LocalAI's InstallBackend leaves it. */
export function buildMetadata(name: string, entry: { alias?: string | null; uri?: string | null; version?: string | null } = {}): LocalAiMetadata {
  return {
    name,
    gallery_url: LOCALAI_GALLERY_URL,
    installed_at: INSTALLED_AT,
    ...(entry.alias && { alias: entry.alias }),
    ...(entry.uri && { uri: entry.uri }),
    ...(entry.version && { version: entry.version }),
  };
}

/** A meta directory as LocalAI's InstallBackendFromGallery leaves it: no alias, the build's version. */
export function metaMetadata(name: string, build: string, version?: string | null): LocalAiMetadata {
  return { name, meta_backend_for: build, gallery_url: LOCALAI_GALLERY_URL, installed_at: INSTALLED_AT, ...(version && { version }) };
}
