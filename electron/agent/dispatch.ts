import type { HangarApi } from '../../shared/api.ts';
import { PING_METHOD, type WireResponse } from '../../shared/wire.ts';
import { invokeNode } from '../core/invoke.ts';

/**
 * Answers one WebSocket text frame. Every frame gets an answer: a frame that is not a request with a safe integer
 * id is answered with id null and an invalid-request error, so a client's bug never turns into silence.
 */
export async function dispatch(node: HangarApi, frame: string): Promise<WireResponse> {
  let message: unknown;
  try {
    message = JSON.parse(frame);
  } catch (error) {
    return invalid(`the frame is not JSON (${(error as Error).message.slice(0, 80)})`);
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return invalid('the frame is not a JSON object');
  const { id, method, params } = message as Record<string, unknown>;
  if (typeof id !== 'number' || !Number.isSafeInteger(id)) return invalid('the request has no integer id');
  if (method === PING_METHOD) return { id, result: null };
  const envelope = await invokeNode(node, method, params);
  return envelope.ok ? { id, result: envelope.value } : { id, error: envelope.error };
}

function invalid(message: string): WireResponse {
  return { id: null, error: { code: 'invalid-request', message } };
}
