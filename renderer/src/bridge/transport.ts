import type { HangarBridge } from '../../../shared/api.ts';

/**
 * `open` is the only state in which calls are answered and events flow. `unresponsive`: the link is up but the
 * agent has not answered a ping within its deadline (stopped, or wedged).
 */
export type ConnectionStatus = 'connecting' | 'open' | 'unresponsive' | 'reconnecting' | 'unauthorized';

/** A bridge plus what the UI needs to know about the link it rides on. */
export interface Transport {
  bridge: HangarBridge;
  status(): ConnectionStatus;
  /** Returns an unsubscribe function. */
  onStatus(listener: (status: ConnectionStatus) => void): () => void;
  /** Present when the transport authenticates with a token the user can type in. */
  signIn?: (token: string) => void;
  close(): void;
}
