import { HangarError, isErrorEnvelope } from '../../../shared/errors.ts';
import type { Envelope } from '../../core/invoke.ts';

/** A node's answer as it was sent: its value, or its error thrown again with its code. */
export function unwrap(envelope: Envelope): unknown {
  if (envelope?.ok === true) return envelope.value;
  if (envelope?.ok === false && isErrorEnvelope(envelope.error)) throw new HangarError(envelope.error.code, envelope.error.message);
  throw new HangarError('failed', 'a node sent a malformed reply');
}
