import { createStore, useStore } from 'zustand';

export interface Toast {
  id: number;
  kind: 'error' | 'info';
  text: string;
}

const TOAST_MS = 8000;
let nextId = 1;

export const toastStore = createStore<{ toasts: Toast[] }>(() => ({ toasts: [] }));

export function toast(kind: Toast['kind'], text: string): void {
  const id = nextId++;
  toastStore.setState((s) => ({ toasts: [...s.toasts, { id, kind, text }] }));
  setTimeout(() => dismissToast(id), TOAST_MS);
}

export function dismissToast(id: number): void {
  toastStore.setState((s) => ({ toasts: s.toasts.filter((t) => t.id !== id) }));
}

export function useToasts(): Toast[] {
  return useStore(toastStore, (s) => s.toasts);
}
