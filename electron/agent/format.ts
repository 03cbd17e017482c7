import type { BackendView, GalleryEntryView, JobView, ProcessView, ScanEntry } from '../../shared/types.ts';
import { createRateMeter, movesBytes, progressText, type RateMeter } from '../../shared/progress.ts';
import { compareVersions } from '../core/gallery/index.ts';

// The --json shapes the CLI promises, projected from the contract's views.
export const lsJson = (b: BackendView) => ({
  name: b.name, alias: b.alias, version: b.version, digest: b.digest, sha256: b.sha256, uri: b.uri, dir: b.dir,
  installedAt: b.installedAt, upgradable: b.upgradable, metaBackendFor: b.metaBackendFor, broken: b.broken,
  processes: b.processes.map(psJson),
});
export const galleryJson = (e: GalleryEntryView) => ({
  name: e.name, gallery: e.gallery, version: e.version, uri: e.uri, installed: e.installed, upgradable: e.upgradable,
  compatible: e.compatible, meta: e.meta,
});
export const psJson = (p: ProcessView) => ({
  model: p.model, backend: p.backend, pid: p.pid, port: p.port, dir: p.dir, startedAt: p.startedAt, cwd: p.cwd, cwdReason: p.cwdReason,
});
export const scanJson = (s: ScanEntry) => ({
  pid: s.pid, command: s.command, cwd: s.cwd, status: s.status, supervised: s.supervised, backend: s.backend,
});

/** A plain aligned table; an empty list prints a hint instead. */
export function table(rows: Record<string, unknown>[], empty: string): string {
  if (rows.length === 0) return empty + '\n';
  const headers = Object.keys(rows[0]!);
  const cells = rows.map((r) => headers.map((h) => cell(r[h])));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...cells.map(line)].join('\n') + '\n';
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return String(value);
}

const meters = new Map<string, RateMeter>();

/** "install echo: fetching 12 MiB of 40 MiB · 30% · 4.2 MiB/s · 7s left"; phases that move no bytes show none. */
export function jobLine(job: JobView): string {
  let meter = meters.get(job.id);
  if (!meter) meters.set(job.id, (meter = createRateMeter()));
  const figures = progressText(job, movesBytes(job) ? meter.sample(job.bytes, Date.now()) : null);
  return `${job.kind} ${job.backend}: ${job.phase}${figures ? ` ${figures}` : ''}`;
}

export function uptime(startedAt: string): string {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(startedAt)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

/** "1.1.0 → 1.0.0 (gallery went back)": LocalAI offers an upgrade on any version difference, so say which way. */
export function upgradeText(installed: string | null, available: string | null): string {
  const text = `${installed ?? '?'} → ${available ?? 'newer'}`;
  return installed && available && compareVersions(available, installed) < 0 ? `${text} (gallery went back)` : text;
}
