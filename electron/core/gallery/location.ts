// Gallery locations (local path, file:// or http(s):// URL) and the names galleries go by.
import { resolve } from 'node:path';
import { HangarError } from '../../../shared/errors.ts';
import { galleryNameFor } from '../../../shared/gallery-name.ts';
import { hidePasswords } from '../../../shared/url-password.ts';
import { checkedUrl, localPathOf } from '../file-url.ts';
import type { GallerySpec } from './types.ts';

export type GalleryLocation = { kind: 'file'; path: string } | { kind: 'url'; url: string };

export const STARTER_GALLERY_NAME = 'starter';

/** The spec of the gallery that ships with Hangar. */
export function starterGallerySpec(location: string): GallerySpec {
  return { name: STARTER_GALLERY_NAME, location };
}

export function parseLocation(location: string): GalleryLocation {
  const what = `gallery location "${hidePasswords(location)}"`;
  if (/^https?:\/\//i.test(location)) return { kind: 'url', url: checkedUrl(location, what) };
  if (/^file:\/\//i.test(location)) return { kind: 'file', path: localPathOf(location, what) };
  if (/^[a-z][a-z0-9+.-]+:\/\//i.test(location)) {
    throw new HangarError('bad-input', `${what}: only local paths, file:// and http(s):// are supported`);
  }
  if (location.includes('\0')) throw new HangarError('bad-input', `${what} holds a NUL character`);
  return { kind: 'file', path: resolve(location) };
}

/**
 * One unique name per spec, in order. Given names must be unique and free of '@' (it qualifies `gallery@name`);
 * a derived name that is taken gets a numeric suffix.
 */
export function galleryNames(specs: GallerySpec[], locations: GalleryLocation[]): string[] {
  const taken = new Set<string>();
  for (const spec of specs) {
    if (spec.name === undefined) continue;
    if (spec.name.trim() === '' || spec.name.includes('@')) {
      throw new HangarError('bad-input', `gallery name "${spec.name}": must be non-empty and must not contain "@"`);
    }
    if (taken.has(spec.name)) throw new HangarError('conflict', `gallery name "${spec.name}" is used twice`);
    taken.add(spec.name);
  }
  return specs.map((spec, index) => {
    if (spec.name !== undefined) return spec.name;
    const location = locations[index]!;
    const base = galleryNameFor(location.kind === 'file' ? location.path : location.url);
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
    taken.add(name);
    return name;
  });
}
