import type { NodeApi } from '../../shared/api.ts';
import type { WireResponse } from '../../shared/wire.ts';
import { invokeNode } from '../core/invoke.ts';

/** Answers one WebSocket text frame. Frames without a numeric id get no answer (there is nobody to answer). */
export async function dispatch(node: NodeApi, frame: string): Promise<WireResponse | null> {
  let message: unknown;
  try {
    message = JSON.parse(frame);
  } catch {
    return null;
  }
  if (typeof message !== 'object' || message === null) return null;
  const { id, method, params } = message as Record<string, unknown>;
  if (typeof id !== 'number' || !Number.isSafeInteger(id)) return null;
  const envelope = await invokeNode(node, method, params);
  return envelope.ok ? { id, result: envelope.value } : { id, error: envelope.error };
}
