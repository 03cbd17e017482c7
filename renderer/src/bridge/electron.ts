import type { HangarBridge } from '../../../shared/api.ts';
import type { Transport } from './transport.ts';

declare global {
  interface Window {
    /** Exposed by the Electron preload; absent in a browser. */
    hangar?: HangarBridge;
  }
}

/** The preload's bridge, when the page runs inside Electron. IPC never disconnects. */
export function electronTransport(): Transport | null {
  const bridge = window.hangar;
  if (!bridge) return null;
  return {
    bridge,
    status: () => 'open',
    onStatus: () => () => {},
    close: () => {},
  };
}
