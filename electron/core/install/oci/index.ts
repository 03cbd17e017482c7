// The OCI registry source and the tag-digest resolver used by upgrade checks.
export { ociSource, createOciSource, type OciSourceOptions } from './oci-source.ts';
export { DigestResolver, type DigestResolverOptions } from './digest-resolver.ts';
export { parseReference, isOciReference, type ImageReference } from './reference.ts';
export { hostPlatform, type Platform } from './platform.ts';
