// The IPC wire between preload and main: one channel per NodeApi method, one event channel, the core's envelope.
import type { HangarMethod } from '../../shared/index.ts';

export type { Envelope as IpcEnvelope } from '../core/invoke.ts';

export const EVENT_CHANNEL = 'hangar:event';

export function methodChannel(method: HangarMethod): string {
  return `hangar:${method}`;
}
