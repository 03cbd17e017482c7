// Whether the agent can be reached, for every component that acts or shows a running time.
import { createStore, useStore } from 'zustand';
import type { ConnectionStatus } from '../bridge/transport.ts';

export interface ConnectionState {
  status: ConnectionStatus;
  /** When the link was lost (ms since epoch); running times stop here until the state is read again. */
  lostAt: number | null;
}

export const connectionStore = createStore<ConnectionState>(() => ({ status: 'connecting', lostAt: null }));

export function setConnection(status: ConnectionStatus, now = Date.now()): void {
  connectionStore.setState((s) => ({ status, lostAt: status === 'open' ? null : (s.lostAt ?? now) }));
}

export const OFFLINE_REASONS: Record<Exclude<ConnectionStatus, 'open'>, string> = {
  connecting: 'Connecting to the agent…',
  reconnecting: 'The agent cannot be reached; actions are off until it is back',
  unresponsive: 'The agent is not answering; actions are off until it answers again',
  unauthorized: 'Sign in to the agent first',
};

/** Why nothing can be done right now, or null when the agent is reachable. */
export function useOfflineReason(): string | null {
  return useStore(connectionStore, (s) => (s.status === 'open' ? null : OFFLINE_REASONS[s.status]));
}

export function useConnection<T>(selector: (state: ConnectionState) => T): T {
  return useStore(connectionStore, selector);
}
