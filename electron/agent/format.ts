import { driftReason, driftText } from '../../shared/drift.ts';
import type { BackendView, DesiredStateView, GalleryEntryView, JobView, NodeCard, NodeInfo, NodeResources, ProcessView, ResourcesView, ScanEntry } from '../../shared/types.ts';
import { createRateMeter, iecBytes, movesBytes, progressText, type RateMeter } from '../../shared/progress.ts';
import { cwdVerdict, exitNote, reportedNumber, shownState, startingNote } from '../../shared/process-text.ts';
import { compareVersions, offeredVersion } from '../../shared/version-order.ts';
import { forTerminal } from './commands/terminal.ts';

// The --json shapes the CLI promises, projected from the contract's views.
export const lsJson = (b: BackendView) => ({
  name: b.name, kind: b.kind, alias: b.alias, version: b.version, digest: b.digest, sha256: b.sha256, uri: b.uri, dir: b.dir,
  installedAt: b.installedAt, upgradable: b.upgradable, metaBackendFor: b.metaBackendFor, runs: b.runs, broken: b.broken,
  localai: b.localai, leftover: b.leftover, kept: b.kept, previous: b.previous, processes: b.processes.map(psJson),
  upgradesUnknown: b.upgradesUnknown ?? null,
});
export const galleryJson = (e: GalleryEntryView) => ({
  name: e.name, gallery: e.gallery, version: e.version, uri: e.uri, installed: e.installed, upgradable: e.upgradable,
  compatible: e.compatible, meta: e.meta,
});
export const psJson = (p: ProcessView) => ({
  model: p.model, backend: p.backend || null, pid: reportedNumber(p.pid), port: reportedNumber(p.port), dir: p.dir, startedAt: p.startedAt || null, state: p.state, loaded: p.loaded,
  policy: p.policy, restarts: p.restarts, restartDelayMs: p.restartDelayMs, maxRestarts: p.maxRestarts, cpu: p.cpu, rss: p.rss, message: p.message, error: p.error, exit: p.exit, cwd: p.cwd,
  cwdReason: p.cwdReason, runBy: p.runBy ?? 'hangar',
});

/** Who runs a model, in a word: Hangar supervises it, or a linked LocalAI server runs it. */
export const runByText = (p: ProcessView) => (p.runBy === 'localai' ? 'LocalAI' : 'Hangar');

/** States in which a process is not doing its job; `ls` does not call a backend with one of them ok. */
const TROUBLE = new Set<ProcessView['state']>(['unresponsive', 'stale', 'exited', 'crashed', 'crash-looping']);

/** "ok", or what is wrong with a backend's processes: "1 crashed, 1 stale". */
function processesStatus(processes: ProcessView[]): string {
  const counts = new Map<string, number>();
  for (const p of processes) {
    const trouble = TROUBLE.has(p.state) ? p.state : p.cwd === 'stale' ? 'stale' : p.error ? 'failing' : null;
    if (trouble) counts.set(trouble, (counts.get(trouble) ?? 0) + 1);
  }
  return counts.size === 0 ? 'ok' : [...counts].map(([state, n]) => `${n} ${state}`).join(', ');
}

/**
 * An `ls` row's STATUS: broken and why; a row that is not a backend Hangar manages ("LocalAI leftover", "kept until
 * DATE"); a name that starts another build ("runs X", "meta → X"); else its processes' state.
 */
export function lsStatus(b: BackendView): string {
  if (b.broken) return `broken: ${b.broken}`;
  if (b.kind === 'leftover') return b.leftover?.restorable ? `LocalAI leftover (restorable as ${b.leftover.of})` : 'LocalAI leftover';
  if (b.kind === 'kept') return `kept from a deleted backend until ${b.kept?.expiresAt.slice(0, 10) ?? '?'}`;
  if (b.kind === 'foreign') return `LocalAI only, runs ${b.runs ?? b.name}`;
  if (b.runs !== null && b.runs !== b.name) return b.runs === b.metaBackendFor ? `meta → ${b.runs}` : `runs ${b.runs}`;
  return processesStatus(b.processes);
}

/** A process in `ls`: "m1:1234 ↺2 (CRASHED)"; the model alone where its node reports no pid. */
export function lsProcess(p: ProcessView): string {
  const pid = reportedNumber(p.pid);
  return `${p.model}${pid === null ? '' : `:${pid}`}${p.restarts > 0 ? ` ↺${p.restarts}` : ''}${shownState(p) === 'ready' ? '' : ` (${shownState(p).toUpperCase()})`}`;
}

/**
 * One `ps` row: state, restarts (↺), uptime, CPU and memory, as PM2's list shows them; with `runBy` (some row is a
 * LocalAI server's), who runs it; with `vram` (the node's tool reports GPU memory per process), the GPU memory each
 * holds.
 */
export function psRow(p: ProcessView, runBy = false, vram?: ProcessVramMap): Record<string, unknown> {
  const ended = p.exit !== null && ['exited', 'crashed', 'crash-looping'].includes(p.state);
  return {
    model: p.model,
    backend: p.backend || null,
    ...(runBy && { 'run by': runByText(p) }),
    pid: reportedNumber(p.pid),
    port: reportedNumber(p.port),
    state: shownState(p),
    '↺': p.restarts,
    restart: restartText(p),
    up: ended ? '-' : uptime(p.startedAt),
    cpu: p.cpu === null || ended ? '-' : `${p.cpu}%`,
    mem: p.rss === null || ended ? '-' : iecBytes(p.rss),
    ...(vram !== undefined && { vram: vram === null || ended ? '-' : iecBytes(vram.get(p.model) ?? 0) }),
    cwd: p.cwd === 'stale' ? `STALE: ${p.cwdReason}` : p.cwd,
    note: p.error ?? (ended ? exitNote(p.exit!, (at) => at) : (startingNote(p, Date.now(), (at) => at) ?? p.message)) ?? '',
  };
}

/** model -> GPU memory its process tree holds; null where the node's tool does not report it per process. */
export type ProcessVramMap = Map<string, number> | null;

export function processVram(r: ResourcesView): ProcessVramMap {
  return r.gpuTools.includes('nvidia-smi') ? new Map(r.processes.map((p) => [p.model, p.vramBytes])) : null;
}

/** How the model restarts: "on-failure 1s ×5" (its policy, the first wait after a quick end, the crash-loop limit). */
function restartText(p: ProcessView): string {
  if (p.policy === 'never') return 'never';
  const delay = p.restartDelayMs % 1000 === 0 ? `${p.restartDelayMs / 1000}s` : `${p.restartDelayMs}ms`;
  return `${p.policy} ${delay} ×${p.maxRestarts}`;
}

/** A scan entry with the one verdict every viewer gives its process (a supervised one's is its supervisor's). */
export const scanJson = (s: ScanEntry, supervised: readonly ProcessView[]) => {
  const verdict = cwdVerdict(s, supervised);
  return { pid: s.pid, command: s.command, cwd: s.cwd, status: verdict.status, reason: verdict.reason, supervised: s.supervised, backend: s.backend };
};

/** `hangar jobs`: newest first, with how each ended or where it is. */
export function jobsTable(jobs: JobView[]): string {
  const rows = [...jobs].sort((a, b) => b.startedAt.localeCompare(a.startedAt)).map((j) => ({
    id: j.id,
    job: `${j.kind} ${j.backend}`,
    state: j.state,
    phase: j.state === 'running' || j.state === 'queued' ? jobLine(j).slice(`${j.kind} ${j.backend}: `.length) : j.phase,
    started: j.startedAt,
    note: j.error ?? j.notice ?? '',
  }));
  return table(rows, 'no jobs yet');
}

/** A plain aligned table; an empty list prints a hint instead. */
/** `hangar info`: one line per fact. */
export function infoText(info: NodeInfo): string {
  const rows: Array<[string, string]> = [
    ['node', `${info.name} (${info.id})`],
    ['version', info.version],
    ['platform', `${info.platform} ${info.arch}, capability ${info.capability}`],
    ['home', info.home],
    ['backends', info.backendsDir],
    ['models', info.modelsDir],
    ['galleries', info.galleries.join(', ') || 'none'],
    ['processes', info.processTracking],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${value}\n`).join('');
}

/** `notes`: lines about the table, printed under it after a blank line so that none reads as one of its rows. */
export function table(rows: Record<string, unknown>[], empty: string, notes = ''): string {
  return notes ? `${rowsText(rows, empty)}\n${notes}` : rowsText(rows, empty);
}

function rowsText(rows: Record<string, unknown>[], empty: string): string {
  if (rows.length === 0) return empty + '\n';
  const headers = Object.keys(rows[0]!);
  const cells = rows.map((r) => headers.map((h) => cell(r[h])));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...cells.map(line)].join('\n') + '\n';
}

/** A cell as the terminal shows it (its control characters escaped), so that its width is the one it takes there. */
function cell(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return forTerminal(String(value));
}

const meters = new Map<string, RateMeter>();

/** "install echo: fetching 12 MiB of 40 MiB · 30% · 4.2 MiB/s · 7s left"; phases that move no bytes show none. */
export function jobLine(job: JobView): string {
  let meter = meters.get(job.id);
  if (!meter) meters.set(job.id, (meter = createRateMeter()));
  const figures = progressText(job, movesBytes(job) ? meter.sample(job.bytes, Date.now()) : null);
  return `${job.kind} ${job.backend}: ${job.phase}${figures ? ` ${figures}` : ''}`;
}

const PAST: Record<JobView['kind'], string> = { install: 'installed', upgrade: 'upgraded', rollback: 'rolled back', delete: 'deleted' };

/** How a job that went through ended: "upgraded echo to 2.0.0", "installed echo 1.0.0", "upgrade echo: up to date". */
export function jobEndText(job: JobView, version: string | null): string {
  if (job.phase !== 'done') return `${job.kind} ${job.backend}: ${job.phase}`;
  if (version === null || job.kind === 'delete') return `${PAST[job.kind]} ${job.backend}`;
  return `${PAST[job.kind]} ${job.backend}${job.kind === 'install' ? ' ' : ' to '}${version}`;
}

/** How long since `startedAt`; '-' where the node reports no time. */
export function uptime(startedAt: string): string {
  const at = Date.parse(startedAt);
  if (Number.isNaN(at)) return '-';
  const s = Math.max(0, Math.round((Date.now() - at) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

/** "1.1.0 → 1.0.0 (gallery went back)": LocalAI offers an upgrade on any version difference, so say which way. */
export function upgradeText(installed: string | null, available: string | null): string {
  const text = `${installed ?? '?'} → ${offeredVersion(installed, available)}`;
  return installed && available && compareVersions(available, installed) < 0 ? `${text} (gallery went back)` : text;
}

/** "online", "offline: why", or "unknown (no broker)". */
export function nodeStatusText(card: NodeCard): string {
  if (card.status === 'online') return 'online';
  // A LocalAI worker's status is LocalAI's own word, with its reason when it takes no calls.
  if (card.kind === 'localai-worker') return card.reason ?? card.localai?.status ?? 'offline';
  return card.status === 'unknown' ? `unknown (${card.reason ?? 'no broker'})` : `offline: ${card.reason ?? 'no heartbeat'}`;
}

/** CPU, memory, disk and GPUs in a few characters each. */
export function resourceCells(r: NodeResources | null): Record<string, string> {
  if (!r) return { cpu: '-', ram: '-', disk: '-', gpu: '-' };
  const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)}G`;
  return {
    cpu: `${r.cpu.count} × ${r.cpu.load1.toFixed(2)}`,
    ram: r.memory ? `${gib(r.memory.availableBytes)}/${gib(r.memory.totalBytes)} free` : '-',
    disk: r.disk ? `${gib(r.disk.freeBytes)} free` : '-',
    gpu: gpuText(r),
  };
}

/** `hangar resources`: the machine, each GPU, and each process's GPU memory. */
export function resourcesText(r: ResourcesView): string {
  const cells = resourceCells(r);
  const head = `cpu   ${r.cpu.count} cores, load ${r.cpu.load1.toFixed(2)}\nram   ${cells.ram}\ndisk  ${cells.disk} (backends)\n`;
  const gpus = r.gpus.length === 0
    ? `gpu   ${gpuText(r)}\n`
    : table(r.gpus.map((g) => ({ gpu: `${g.vendor} ${g.index}`, model: g.model, vram: iecOrUnknown(g.vramUsedBytes) + ' / ' + iecOrUnknown(g.vramTotalBytes), busy: g.utilization === null ? '-' : `${g.utilization}%` })), '');
  const processes = r.processes.length === 0 ? '' : table(r.processes.map((p) => ({ model: p.model, pid: p.pid, vram: iecBytes(p.vramBytes) })), '');
  return head + gpus + processes;
}

/** One node's line of `hangar resources --on all`: the machine, then the GPU memory its processes hold. */
export function resourcesRow(name: string, r: ResourcesView): Record<string, unknown> {
  const held = r.processes.reduce((sum, p) => sum + p.vramBytes, 0);
  return { node: name, ...resourceCells(r), 'vram held': processVram(r) === null ? '-' : iecBytes(held) };
}

const iecOrUnknown = (bytes: number | null) => (bytes === null ? '?' : iecBytes(bytes));

/** "RTX 4090 1.0G/24.0G 3%, …", or why there is nothing to show. */
export function gpuText(r: NodeResources): string {
  if (r.gpus.length === 0) return r.gpuProblem ?? (r.gpuTools.length === 0 ? 'no GPU tool found' : 'no GPU');
  const gib = (bytes: number | null) => (bytes === null ? '?' : `${(bytes / 1024 ** 3).toFixed(1)}G`);
  return r.gpus.map((g) => `${g.model} ${gib(g.vramUsedBytes)}/${gib(g.vramTotalBytes)}${g.utilization === null ? '' : ` ${g.utilization}%`}`).join(', ');
}

export interface MatrixColumn {
  card: NodeCard;
  /** null: the node is offline; an Error: it did not answer. */
  backends: BackendView[] | Error | null;
}

/**
 * One row per backend, one column per node: the version there, → the version on offer, stale processes, and the
 * desired version where the node differs from it ("2.0.0 wanted"); then why a node is away or not there yet.
 */
export function matrix(columns: MatrixColumn[], desired: DesiredStateView): string {
  const wanted = desired.desired.filter((d) => d.installMissing).map((d) => d.backend);
  const names = [...new Set([...columns.flatMap((c) => (Array.isArray(c.backends) ? c.backends.filter((b) => b.kind === 'backend').map((b) => b.name) : [])), ...wanted])].sort();
  const header = columns.map((c) => c.card.name + (columns.filter((o) => o.card.name === c.card.name).length > 1 ? ` (${c.card.id})` : ''));
  const rows = names.map((name) => Object.fromEntries([
    ['backend', name],
    ...columns.map((c, i) => [header[i]!, matrixCell(c, name, desired)]),
  ]));
  const reasons = columns.flatMap((c) => names.flatMap((name) => {
    const reason = cellDrift(c, name, desired) && driftReason(desired.nodes, c.card.id, name);
    return reason ? [`${c.card.name} (${c.card.id}): ${name}: ${reason}\n`] : [];
  }));
  const answered = columns.filter((c) => Array.isArray(c.backends)).length;
  const empty = answered === 0 ? 'no node answered' : answered === columns.length ? 'no backends installed on any node' : `no backends installed on the ${answered} of ${columns.length} nodes that answered`;
  const upgradesUnknown = columns.map((c) => (Array.isArray(c.backends) ? upgradesUnknownLines(c.backends, `${c.card.name} (${c.card.id}): `) : '')).join('');
  return table(rows, empty, unansweredLines(columns.map((c) => ({ card: c.card, answer: c.backends }))) + upgradesUnknown + reasons.join(''));
}

/** Why no upgrade is known for some of a node's backends, once per reason; `who` names the node in a table of several. */
export function upgradesUnknownLines(backends: BackendView[], who = ''): string {
  return [...new Set(backends.flatMap((b) => b.upgradesUnknown ?? []))].map((reason) => `${who}upgrades unknown: ${reason}\n`).join('');
}

/** A line for each node that is offline or did not answer, under a table across nodes. */
export function unansweredLines(answers: { card: NodeCard; answer: unknown }[]): string {
  return answers
    .filter((a) => a.answer === null || a.answer instanceof Error)
    .map(({ card, answer }) => `${card.name} (${card.id}): ${answer === null ? nodeStatusText(card) : (answer as Error).message}\n`)
    .join('');
}

/**
 * A listing across nodes failed when no node answered (the cluster's server away, say); a node offline or refusing is
 * a row that says so while another answered.
 */
export function listingFailed(answers: { answer: unknown }[]): boolean {
  return !answers.some((a) => a.answer !== null && !(a.answer instanceof Error));
}

function cellDrift(column: MatrixColumn, name: string, desired: DesiredStateView): string | null {
  if (!Array.isArray(column.backends)) return null;
  return driftText(desired.desired, column.card, name, column.backends.find((x) => x.name === name)?.version);
}

function matrixCell(column: MatrixColumn, name: string, desired: DesiredStateView): string {
  if (!Array.isArray(column.backends)) return column.backends === null ? column.card.status : 'no answer';
  const b = column.backends.find((x) => x.name === name);
  const drift = cellDrift(column, name, desired);
  if (!b) return drift ? `- (${drift})` : '-';
  const stale = b.processes.filter((p) => p.cwd === 'stale').length;
  return [b.upgradable ? upgradeText(b.version, b.availableVersion) : (b.version ?? '?'), stale > 0 ? `STALE ${stale}` : '', drift ? `(${drift})` : ''].filter(Boolean).join(' ');
}

export function matrixJson(columns: MatrixColumn[], desired: DesiredStateView) {
  return columns.map((c) => ({
    node: c.card.id,
    name: c.card.name,
    status: c.card.status,
    error: c.backends instanceof Error ? c.backends.message : null,
    backends: Array.isArray(c.backends)
      ? c.backends.filter((b) => b.kind === 'backend').map((b) => ({
        name: b.name, version: b.version, upgradable: b.upgradable, availableVersion: b.availableVersion, upgradesUnknown: b.upgradesUnknown ?? null,
        stale: b.processes.filter((p) => p.cwd === 'stale').length,
        wanted: cellDrift(c, b.name, desired)?.replace(/ wanted$/, '') ?? null,
      }))
      : null,
  }));
}

