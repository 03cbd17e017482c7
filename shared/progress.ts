// How every host words a job's progress: IEC units, and percent, speed and ETA when the size is known.
import type { JobView } from './types.ts';

const IEC_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** 1536 → "1.5 KiB"; below 10 of a unit one decimal is kept, so a label does not jitter in width. */
export function iecBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '–';
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < IEC_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${value} B`;
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${IEC_UNITS[unit]}`;
}

/** Seconds → "42s", "3m 05s", "2h 04m". */
export function etaText(seconds: number): string {
  const total = Math.max(0, Math.ceil(seconds));
  const pad = (n: number) => String(n).padStart(2, '0');
  if (total >= 3600) return `${Math.floor(total / 3600)}h ${pad(Math.floor(total / 60) % 60)}m`;
  if (total >= 60) return `${Math.floor(total / 60)}m ${pad(total % 60)}s`;
  return `${total}s`;
}

/** Only fetching moves bytes; every other phase (verifying, swapping, rolling back…) shows no byte count. */
export function movesBytes(job: Pick<JobView, 'state' | 'phase'>): boolean {
  return job.state === 'running' && job.phase === 'fetching';
}

/** Bytes per second over the last few seconds of samples; null until there is enough to say. */
export interface RateMeter {
  sample(bytes: number, atMs: number): number | null;
}

const RATE_WINDOW_MS = 5000;
const RATE_MIN_SPAN_MS = 500;

export function createRateMeter(): RateMeter {
  const samples: { bytes: number; at: number }[] = [];
  return {
    sample(bytes, at) {
      const last = samples.at(-1);
      if (last && bytes < last.bytes) samples.length = 0; // a retry started over
      if (!last || at > last.at) samples.push({ bytes, at });
      while (samples.length > 2 && samples[0]!.at < at - RATE_WINDOW_MS) samples.shift();
      const first = samples[0]!;
      const span = at - first.at;
      return span >= RATE_MIN_SPAN_MS ? ((bytes - first.bytes) * 1000) / span : null;
    },
  };
}

/**
 * "12 MiB of 40 MiB · 30% · 4.2 MiB/s · 7s left", or "12 MiB · 4.2 MiB/s" when the size is unknown; null for a
 * phase that moves no bytes.
 */
export function progressText(job: Pick<JobView, 'state' | 'phase' | 'bytes' | 'totalBytes'>, rate: number | null): string | null {
  if (!movesBytes(job)) return null;
  const parts: string[] = [];
  const total = job.totalBytes !== null && job.totalBytes > 0 ? job.totalBytes : null;
  parts.push(total === null ? iecBytes(job.bytes) : `${iecBytes(job.bytes)} of ${iecBytes(total)}`);
  if (total !== null) parts.push(`${Math.min(100, Math.floor((job.bytes * 100) / total))}%`);
  if (rate !== null && rate > 0) {
    parts.push(`${iecBytes(rate)}/s`);
    if (total !== null && total > job.bytes) parts.push(`${etaText((total - job.bytes) / rate)} left`);
  }
  return parts.join(' · ');
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
