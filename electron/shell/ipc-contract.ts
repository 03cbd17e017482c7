// The IPC wire between preload and main: one channel per NodeApi method, one event channel, one envelope.
import type { ErrorEnvelope, NodeMethod } from '../../shared/index.ts';

export const EVENT_CHANNEL = 'hangar:event';

export function methodChannel(method: NodeMethod): string {
  return `hangar:${method}`;
}

/** What every `hangar:<method>` handler resolves to: errors travel as data, never as thrown stacks. */
export type IpcEnvelope<T = unknown> = { ok: true; value: T } | { ok: false; error: ErrorEnvelope };
