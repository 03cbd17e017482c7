// The IPC wire between preload and main: one channel per NodeApi method, one event channel, the core's envelope.
import type { NodeMethod } from '../../shared/index.ts';

export type { Envelope as IpcEnvelope } from '../core/invoke.ts';

export const EVENT_CHANNEL = 'hangar:event';

export function methodChannel(method: NodeMethod): string {
  return `hangar:${method}`;
}
