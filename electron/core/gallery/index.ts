export type { GalleryEntry, GalleryLoadError, GallerySpec, IndexSource } from './types.ts';
export { Galleries, type ResolvedEntry } from './galleries.ts';
export { parseGalleryIndex } from './parse.ts';
export { isMeta, resolveMetaKey } from './meta.ts';
export { detectCapability } from './capability.ts';
export { compareVersions, isUpgradable } from './version.ts';
export { STARTER_GALLERY_NAME, starterGallerySpec } from './location.ts';
