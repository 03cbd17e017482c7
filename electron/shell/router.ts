// The IPC router without Electron: the sender check in front of the core's validating invoker.
import type { HangarApi } from '../../shared/index.ts';
import { invokeNode } from '../core/invoke.ts';
import type { IpcEnvelope } from './ipc-contract.ts';

export type Route = (method: string, sender: unknown, payload: unknown) => Promise<IpcEnvelope>;

const FORBIDDEN: IpcEnvelope = {
  ok: false,
  error: { code: 'forbidden', message: "refused a request that did not come from Hangar's own window" },
};

/** Answers one IPC call. Nothing reaches `node` unless the sender is trusted and the payload passed its schema. */
export function createRouter<Sender>(node: HangarApi, isTrustedSender: (sender: Sender) => boolean): Route {
  return async (method, sender, payload) => {
    if (!isTrustedSender(sender as Sender)) return FORBIDDEN;
    return invokeNode(node, method, payload);
  };
}
