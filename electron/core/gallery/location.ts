// Gallery locations (local path, file:// or http(s):// URL) and the names galleries go by.
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { messageOf } from '../../../shared/error-text.ts';
import { HangarError } from '../../../shared/errors.ts';
import { galleryNameFor } from '../../../shared/gallery-name.ts';
import type { GallerySpec } from './types.ts';

export type GalleryLocation = { kind: 'file'; path: string } | { kind: 'url'; url: string };

export const STARTER_GALLERY_NAME = 'starter';

/** The spec of the gallery that ships with Hangar. */
export function starterGallerySpec(location: string): GallerySpec {
  return { name: STARTER_GALLERY_NAME, location };
}

export function parseLocation(location: string): GalleryLocation {
  const refused = (why: string) => new HangarError('bad-input', `gallery location "${location}" ${why}`);
  if (/^https?:\/\//i.test(location)) {
    if (!URL.canParse(location)) throw refused('is not a valid URL');
    return { kind: 'url', url: new URL(location).href };
  }
  if (/^[a-z][a-z0-9+.-]+:\/\//i.test(location) && !/^file:\/\//i.test(location)) {
    throw new HangarError('bad-input', `gallery location "${location}": only local paths, file:// and http(s):// are supported`);
  }
  let path: string;
  try {
    path = /^file:\/\//i.test(location) ? fileURLToPath(location) : resolve(location);
  } catch (error) {
    const reason = messageOf(error);
    throw refused(`is not a file on this machine: ${reason.charAt(0).toLowerCase()}${reason.slice(1)}`);
  }
  if (path.includes('\0')) throw refused('holds a NUL character');
  return { kind: 'file', path };
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
