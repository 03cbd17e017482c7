// Whether the agent can be reached, for every component that acts or shows a running time; and, for every view of
// what the agent said, whether the link was lost since it was read (then it is no word on now, until read again).
import { useEffect } from 'react';
import { createStore, useStore } from 'zustand';
import type { ConnectionStatus } from '../bridge/transport.ts';
import { clockTime } from '../format.ts';

export interface ConnectionState {
  status: ConnectionStatus;
  /** When the link was lost (ms since epoch); running times stop here until the state is read again. */
  lostAt: number | null;
  /** When the link was last lost, kept once it is back: what was read before it is unknown until read again. */
  lastLostAt: number | null;
}

export const connectionStore = createStore<ConnectionState>(() => ({ status: 'connecting', lostAt: null, lastLostAt: null }));

export function setConnection(status: ConnectionStatus, now = Date.now()): void {
  connectionStore.setState((s) => {
    const lostAt = status === 'open' ? null : (s.lostAt ?? now);
    return { status, lostAt, lastLostAt: lostAt ?? s.lastLostAt };
  });
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

/** When the link was lost since what was read at `readAt` (null: never read), or null while that read still holds. */
export function lostSince(state: ConnectionState, readAt: number | null): number | null {
  const lost = state.lastLostAt;
  return lost !== null && (readAt === null || readAt <= lost) ? lost : null;
}

export function useLostSince(readAt: number | null): number | null {
  return useStore(connectionStore, (s) => lostSince(s, readAt));
}

/** "unknown since the connection to the agent was lost at 14:03:07": what a view says in place of a state it cannot know. */
export function unknownSince(lostAt: number): string {
  return `unknown since the connection to the agent was lost at ${clockTime(new Date(lostAt).toISOString())}`;
}

/** Reads again, once the link is back, what was read before it was lost: nothing else would say it has changed. */
export function useReadAgainWhenBack(lostAt: number | null, read: () => Promise<void>): void {
  const open = useStore(connectionStore, (s) => s.status === 'open');
  useEffect(() => {
    if (open && lostAt !== null) void read().catch(() => undefined);
  }, [open, lostAt, read]);
}
