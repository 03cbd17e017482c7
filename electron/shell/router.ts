// The IPC router without Electron: sender check, schema validation, the node call, and the envelope.
import { isNodeMethod, parseRequest, type NodeApi } from '../../shared/index.ts';
import { toErrorEnvelope } from './errors.ts';
import type { IpcEnvelope } from './ipc-contract.ts';

export type Route = (method: string, sender: unknown, payload: unknown) => Promise<IpcEnvelope>;

const FORBIDDEN: IpcEnvelope = {
  ok: false,
  error: { code: 'forbidden', message: "refused a request that did not come from Hangar's own window" },
};

/** Answers one IPC call. Nothing reaches `node` unless the sender is trusted and the payload passed its schema. */
export function createRouter<Sender>(node: NodeApi, isTrustedSender: (sender: Sender) => boolean): Route {
  return async (method, sender, payload) => {
    if (!isTrustedSender(sender as Sender)) return FORBIDDEN;
    if (!isNodeMethod(method)) return { ok: false, error: { code: 'invalid-request', message: 'unknown method' } };
    try {
      const request = parseRequest(method, payload);
      const call = node[method] as (req: typeof request) => Promise<unknown>;
      return { ok: true, value: await call.call(node, request) };
    } catch (error) {
      return { ok: false, error: toErrorEnvelope(error) };
    }
  };
}
