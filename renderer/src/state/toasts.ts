import { createStore, useStore } from 'zustand';

export interface Toast {
  id: number;
  kind: 'error' | 'info';
  text: string;
  /** ms since epoch */
  at: number;
}

const TOAST_MS = 8000;
const HISTORY_MAX = 200;
let nextId = 1;

/** `toasts` are on screen now; `history` keeps what this page alone saw (an action's error, a load's result). */
export const toastStore = createStore<{ toasts: Toast[]; history: Toast[] }>(() => ({ toasts: [], history: [] }));

/** Shows a notification for a few seconds and keeps it in the history. */
export function toast(kind: Toast['kind'], text: string): void {
  const notice = remember(kind, text);
  toastStore.setState((s) => ({ toasts: [...s.toasts, notice] }));
  setTimeout(() => dismissToast(notice.id), TOAST_MS);
}

/** Keeps a notification in the history only: for what the screen already shows where it happened. */
export function remember(kind: Toast['kind'], text: string): Toast {
  const notice = { id: nextId++, kind, text, at: Date.now() };
  toastStore.setState((s) => ({ history: [notice, ...s.history].slice(0, HISTORY_MAX) }));
  return notice;
}

export function dismissToast(id: number): void {
  toastStore.setState((s) => ({ toasts: s.toasts.filter((t) => t.id !== id) }));
}

export function useToasts(): Toast[] {
  return useStore(toastStore, (s) => s.toasts);
}

export function useHistory(): Toast[] {
  return useStore(toastStore, (s) => s.history);
}
