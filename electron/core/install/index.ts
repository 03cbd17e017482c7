// What others need of installing: the size limits as the command line gives them, a backend's metadata.json read
// safely, and OCI images (their digests, and an image as a source of a backend's tree).
export { parseSize } from './limits.ts';
export { readMetadataTextSync } from './metadata.ts';
export { DigestResolver, ociSource } from './oci/index.ts';
