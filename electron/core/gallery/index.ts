export type { GalleryEntry, GallerySpec, IndexSource } from './types.ts';
export { Galleries, type ResolvedEntry } from './galleries.ts';
export { parseGalleryIndex } from './parse.ts';
export { isEntryCompatible, isMeta, preferredBuild, resolveMetaKey } from './meta.ts';
export { metaResolution } from './variants.ts';
export { VariantChoices } from './variant-choices.ts';
export { detectCapability } from './capability.ts';
export { compareVersions, digestDiffers, versionVerdict } from './version.ts';
export { STARTER_GALLERY_NAME, starterGallerySpec } from './location.ts';
