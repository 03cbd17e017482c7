import { createStore, useStore } from 'zustand';

/** One shared 1 s clock: only the components that show a running time subscribe to it. */
export const clockStore = createStore<{ now: number }>(() => ({ now: Date.now() }));

export function startClock(): () => void {
  const timer = setInterval(() => clockStore.setState({ now: Date.now() }), 1000);
  return () => clearInterval(timer);
}

export function useNow(): number {
  return useStore(clockStore, (s) => s.now);
}
