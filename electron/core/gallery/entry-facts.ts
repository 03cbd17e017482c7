import type { GalleryEntryView } from '../../../shared/types.ts';
import { hidePasswords } from '../../../shared/url-password.ts';
import type { GalleryEntry } from './types.ts';

/** What a gallery entry's view says of it as the index lists it, whatever node it is shown for. */
export function entryFacts(entry: GalleryEntry): Pick<GalleryEntryView, 'name' | 'gallery' | 'alias' | 'version' | 'uri' | 'description' | 'license' | 'tags' | 'icon'> {
  const { name, gallery, alias, version, uri, description, license, tags, icon } = entry;
  return { name, gallery, alias, version, uri: uri && hidePasswords(uri), description, license, tags, icon };
}
