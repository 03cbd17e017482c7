import { createStore, useStore } from 'zustand';
import type { GalleryEntryView } from '../../../shared/types.ts';

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

export function filterEntries(entries: GalleryEntryView[], filters: GalleryFilters): GalleryEntryView[] {
  const words = filters.query.toLowerCase().split(/\s+/).filter(Boolean);
  return entries.filter((entry) => {
    if (filters.tag && !entry.tags.includes(filters.tag)) return false;
    if (!matchesStatus(entry, filters.status)) return false;
    const haystack = [entry.name, entry.alias, entry.description, entry.gallery, ...entry.tags].join(' ').toLowerCase();
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
