import { createStore, useStore } from 'zustand';
import { selectedNode } from './node.ts';
import type { LogLine } from '../../../shared/types.ts';
import { bridge } from './session.ts';
import { messageOf } from '../../../shared/error-text.ts';

const MAX_LINES = 5000;

export interface LogsState {
  model: string | null;
  lines: LogLine[];
  loading: boolean;
  error: string | null;
}

export const logsStore = createStore<LogsState>(() => ({ model: null, lines: [], loading: false, error: null }));

/** Opens the tail for one model: the backlog from `logs`, then its live 'log' events. */
export async function openLogs(model: string): Promise<void> {
  logsStore.setState({ model, lines: [], loading: true, error: null });
  try {
    const backlog = await bridge().logs({ node: selectedNode(), model });
    if (logsStore.getState().model !== model) return;
    // Lines that arrived live while the backlog was on its way are kept if the backlog does not already end with them.
    const live = logsStore.getState().lines;
    const last = backlog.at(-1);
    const fresh = last ? live.filter((line) => line.at > last.at) : live;
    logsStore.setState({ lines: [...backlog, ...fresh].slice(-MAX_LINES), loading: false });
  } catch (error) {
    if (logsStore.getState().model === model) logsStore.setState({ loading: false, error: messageOf(error) });
  }
}

export function closeLogs(): void {
  logsStore.setState({ model: null, lines: [], loading: false, error: null });
}

export function appendLog(line: LogLine): void {
  const state = logsStore.getState();
  if (line.model !== state.model) return;
  const lines = state.lines.length >= MAX_LINES ? [...state.lines.slice(1 - MAX_LINES), line] : [...state.lines, line];
  logsStore.setState({ lines });
}

export function useLogs<T>(selector: (state: LogsState) => T): T {
  return useStore(logsStore, selector);
}
