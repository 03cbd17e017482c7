import type { ErrorCode, ErrorEnvelope } from './types.ts';

/** An error meant for the user: its message is one clear line, and it travels as an ErrorEnvelope. */
export class HangarError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'HangarError';
  }
}

export function isErrorEnvelope(value: unknown): value is ErrorEnvelope {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ErrorEnvelope).code === 'string' &&
    typeof (value as ErrorEnvelope).message === 'string'
  );
}
