// An id typed in full or by its first characters, as `hangar jobs` and `hangar rollouts` list them.
import { HangarError } from '../../shared/errors.ts';

/**
 * The one of `ids` that `text` is or starts. Characters that start several are refused, naming them (`list` is the
 * command that shows them all); none is passed on as typed, for the host to say it knows no such id.
 */
export function pickId(ids: readonly string[], text: string, what: { plural: string; list: string }): string {
  if (ids.includes(text)) return text;
  const matching = ids.filter((id) => id.startsWith(text));
  if (matching.length > 1) throw new HangarError('invalid-request', `${matching.length} ${what.plural} start with "${text}" (${matching.join(', ')}): give more of the id (see ${what.list})`);
  return matching[0] ?? text;
}
