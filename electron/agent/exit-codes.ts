// The CLI's exit status, by what went wrong (README, "Exit codes"): a script can tell a name that is not there from
// a node that refused, or a build that failed, without reading the message.
import { HangarError } from '../../shared/errors.ts';
import type { ErrorCode } from '../../shared/types.ts';
import { HomeBusyError } from '../core/home-lock.ts';

/** 2 is also commander's, for a command typed wrong; 130 is an interrupt (Ctrl-C). */
export const EXIT_CODES: Readonly<Record<ErrorCode, number>> = {
  failed: 1,
  'invalid-request': 2,
  'not-found': 3,
  conflict: 4,
  forbidden: 5,
  'bad-input': 6,
};

export function exitCodeOf(error: unknown): number {
  if (error instanceof HangarError) return EXIT_CODES[error.code];
  // Another agent already serves the home: the same as any other conflict.
  if (error instanceof HomeBusyError) return EXIT_CODES.conflict;
  return EXIT_CODES.failed;
}
