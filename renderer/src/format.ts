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
