// Human-readable figures for the UI.

import { iecBytes } from '../../shared/progress.ts';

/** IEC units, as the CLI and every other host speak them. */
export { iecBytes as humanBytes };

/** "3.0/24 GiB": a part and its whole in the whole's unit. */
export function bytesOf(part: number, whole: number): string {
  const [figure = '', unit = 'B'] = iecBytes(whole).split(' ');
  const scale = whole / Number(figure) || 1;
  return `${(part / scale).toFixed(part / scale < 10 ? 1 : 0)}/${figure} ${unit}`;
}

export { humanDuration } from '../../shared/progress.ts';

/** How many of a commit's hex digits are shown, as the sha256 of a LocalAI build is: enough to tell, short to read. */
const COMMIT_DIGITS = 12;

/**
 * A version as LocalAI's /version says it, "v3.9.0 (82c191afadf5f005281e798ccfa0ffd0d5805030)": its tag, and its
 * commit whole and short (null when it names none).
 */
export function versionParts(text: string): { tag: string; commit: { full: string; short: string } | null } {
  const match = /^(.*?)\s*\(([0-9a-f]{7,64})\)$/.exec(text.trim());
  if (!match) return { tag: text.trim(), commit: null };
  return { tag: match[1]!, commit: { full: match[2]!, short: match[2]!.slice(0, COMMIT_DIGITS) } };
}

/** A moment as this machine's clock shows it, e.g. "14:03:07". */
export function clockTime(iso: string): string {
  return new Date(iso).toLocaleTimeString([], { hour12: false });
}
