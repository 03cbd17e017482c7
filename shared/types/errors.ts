// The error every transport returns. Plain JSON only: no bigint, no Date.

/** The error shape every transport returns: a code and one clear line, never a stack. */
export interface ErrorEnvelope {
  code: ErrorCode;
  message: string;
}

export type ErrorCode =
  | 'invalid-request'
  | 'forbidden'
  | 'not-found'
  | 'conflict'
  | 'bad-input'
  | 'failed';
