// The renderer-side HangarBridge over an invoke/subscribe pair. preload.ts feeds it ipcRenderer; tests feed it the router.
import { bridgeFrom, HangarError, isErrorEnvelope, type HangarBridge, type NodeEvent } from '../../shared/index.ts';
import { EVENT_CHANNEL, methodChannel, type IpcEnvelope } from './ipc-contract.ts';

export type Invoke = (channel: string, payload: unknown) => Promise<unknown>;
export type Subscribe = (channel: string, listener: (payload: unknown) => void) => () => void;

/** Exactly the NodeApi functions (derived from the contract) plus `onEvent`. */
export function createBridge(invoke: Invoke, subscribe: Subscribe): HangarBridge {
  return bridgeFrom(
    async (method, request) => unwrap(await invoke(methodChannel(method), request)),
    (listener: (event: NodeEvent) => void) => subscribe(EVENT_CHANNEL, (payload) => listener(payload as NodeEvent)),
  );
}

/** Resolves an envelope's value, or throws a HangarError carrying its code and message. */
export function unwrap(reply: unknown): unknown {
  const envelope = reply as IpcEnvelope | null;
  if (envelope?.ok === true) return envelope.value;
  if (envelope?.ok === false && isErrorEnvelope(envelope.error)) throw new HangarError(envelope.error.code, envelope.error.message);
  throw new HangarError('failed', 'the main process sent a malformed reply');
}
