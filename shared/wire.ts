// The WebSocket wire format between the headless agent and its clients (the browser renderer, the CLI).
import type { HangarMethod } from './api.ts';
import type { ErrorEnvelope, NodeEvent } from './types.ts';

export const WS_PATH = '/api/ws';
export const WS_PROTOCOL = 'hangar.v1';

/** Browsers cannot set headers on a WebSocket, so the token rides as a second subprotocol. */
export function tokenProtocol(token: string): string {
  return `hangar.token.${token}`;
}

/**
 * A request the agent answers itself, without asking its node: a viewer sends one every few seconds to learn that
 * the agent still answers (a stopped or wedged agent keeps its socket open but answers nothing).
 */
export const PING_METHOD = 'ping';

export interface WireRequest {
  id: number;
  method: HangarMethod | typeof PING_METHOD;
  params: unknown;
}

/** id is null only in the answer to a frame that carried no usable id. */
export type WireResponse = { id: number; result: unknown } | { id: number | null; error: ErrorEnvelope };

export interface WirePush {
  event: NodeEvent;
}

export type WireMessage = WireResponse | WirePush;
