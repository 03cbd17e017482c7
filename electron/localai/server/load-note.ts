import { oneLine } from '../../../shared/error-text.ts';

/**
 * `error` of `model`'s load with `note` (why it may have failed, when Hangar knows one) put first, keeping its class:
 * LocalAI's own words can be long, and a short line of the error is what reaches the user.
 */
export function withLoadNote(error: unknown, model: string, note: string | null): unknown {
  if (note === null) return error;
  const said = `${model} did not load, and ${note}. ${error instanceof Error ? error.message : oneLine(error)}`;
  if (!(error instanceof Error)) return new Error(said);
  error.message = said;
  return error;
}
