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

/** Milliseconds → "42s", "3m 05s", "2h 04m", "3d 02h". */
export function humanDuration(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const s = total % 60;
  const m = Math.floor(total / 60) % 60;
  const h = Math.floor(total / 3600) % 24;
  const d = Math.floor(total / 86400);
  const pad = (n: number) => String(n).padStart(2, '0');
  if (d > 0) return `${d}d ${pad(h)}h`;
  if (h > 0) return `${h}h ${pad(m)}m`;
  if (m > 0) return `${m}m ${pad(s)}s`;
  return `${s}s`;
}
