/** One backend as a LocalAI gallery index lists it, plus where it came from. */
export interface GalleryEntry {
  name: string;
  /** Name of the gallery that lists this entry. */
  gallery: string;
  alias: string | null;
  uri: string | null;
  version: string | null;
  sha256: string | null;
  mirrors: string[];
  /** capability key -> concrete backend name; set on meta backends (and on concretes that merged a meta's anchor). */
  capabilities: Record<string, string> | null;
  description: string | null;
  license: string | null;
  tags: string[];
  urls: string[];
  icon: string | null;
  /** Folder of a local index file, for relative uris; null for remote indexes. */
  baseDir: string | null;
  /** URL of a remote index, for relative uris; null for local indexes. */
  baseUrl: string | null;
}

/** A gallery as configured: a local path, a file:// URL or an http(s):// URL, optionally named. */
export interface GallerySpec {
  name?: string;
  location: string;
}

/** Where an index text came from; stamped on every entry parsed from it. */
export interface IndexSource {
  gallery: string;
  baseDir: string | null;
  baseUrl: string | null;
}
