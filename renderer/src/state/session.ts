import type { HangarBridge } from '../../../shared/api.ts';

let current: HangarBridge | null = null;

/** The bridge every store action goes through; set once at start-up. */
export function setBridge(bridge: HangarBridge): void {
  current = bridge;
}

export function bridge(): HangarBridge {
  if (!current) throw new Error('the bridge is not set');
  return current;
}
