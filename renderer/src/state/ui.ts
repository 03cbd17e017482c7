import { createStore, useStore } from 'zustand';

export type View = 'backends' | 'gallery' | 'processes' | 'settings' | 'notifications' | 'cluster';

export interface UiState {
  view: View;
}

export const uiStore = createStore<UiState>(() => ({ view: 'backends' }));

export function showView(view: View): void {
  uiStore.setState({ view });
}

export function useUi<T>(selector: (state: UiState) => T): T {
  return useStore(uiStore, selector);
}
