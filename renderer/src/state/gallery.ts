import { createStore, useStore } from 'zustand';
import { sourcesByName, type Sources } from '../../../shared/gallery-sources.ts';
import type { GalleryEntryView } from '../../../shared/types.ts';

/** One backend name of the gallery: the entry the node follows, and the other galleries' entries of that name. */
export type GalleryBackend = Sources<GalleryEntryView>;

export type GalleryStatusFilter = 'all' | 'installed' | 'not-installed' | 'upgradable' | 'meta';

export interface GalleryFilters {
  query: string;
  status: GalleryStatusFilter;
  tag: string;
}

export interface GalleryState {
  loaded: boolean;
  entries: GalleryEntryView[];
  error: string | null;
  filters: GalleryFilters;
}

export const galleryStore = createStore<GalleryState>(() => ({
  loaded: false,
  entries: [],
  error: null,
  filters: { query: '', status: 'all', tag: '' },
}));

/** The list with each given entry put in place of its old view (same gallery and name). */
export function withEntries(entries: GalleryEntryView[], changed: GalleryEntryView[]): GalleryEntryView[] {
  const key = (e: GalleryEntryView) => `${e.gallery}\0${e.name}`;
  const updates = new Map(changed.map((e) => [key(e), e]));
  return entries.map((e) => updates.get(key(e)) ?? e);
}

export function setFilters(patch: Partial<GalleryFilters>): void {
  galleryStore.setState((s) => ({ filters: { ...s.filters, ...patch } }));
}

/**
 * One card per backend name, kept when its followed entry has the status asked for and any of its sources has
 * the words and the tag.
 */
export function filterBackends(entries: GalleryEntryView[], filters: GalleryFilters): GalleryBackend[] {
  const words = filters.query.toLowerCase().split(/\s+/).filter(Boolean);
  return sourcesByName(entries).filter((backend) => {
    const sources = [backend.followed, ...backend.others];
    if (filters.tag && !sources.some((e) => e.tags.includes(filters.tag))) return false;
    if (!matchesStatus(backend.followed, filters.status)) return false;
    const haystack = sources.flatMap((e) => [e.name, e.alias, e.description, e.gallery, ...e.tags]).join(' ').toLowerCase();
    return words.every((word) => haystack.includes(word));
  });
}

function matchesStatus(entry: GalleryEntryView, status: GalleryStatusFilter): boolean {
  switch (status) {
    case 'all':
      return true;
    case 'installed':
      return entry.installed;
    case 'not-installed':
      return !entry.installed;
    case 'upgradable':
      return entry.upgradable;
    case 'meta':
      return entry.meta !== null;
  }
}

export function allTags(entries: GalleryEntryView[]): string[] {
  return [...new Set(entries.flatMap((e) => e.tags))].sort();
}

export function useGallery<T>(selector: (state: GalleryState) => T): T {
  return useStore(galleryStore, selector);
}
