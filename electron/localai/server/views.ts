// A LocalAI server's models as Hangar's views show processes, and what its backends directory says of them.
import { join } from 'node:path';
import type { ProcessView } from '../../../shared/types.ts';
import { installed, metadata } from './backend-names.ts';
import { currentPlatform } from '../../core/platform/index.ts';
import { rowUsage } from '../../core/supervisor/index.ts';
import type { ServerProcess } from './processes.ts';

/** One model LocalAI has loaded, with the process of it found on this machine (null: none is visible here). */
export interface ModelRow {
  model: string;
  /** The backend its config names (or the directory its process runs from, when the config names none). */
  backend: string;
  process: ServerProcess | null;
  /** Several models share the backend and Hangar did not see which process started for which. */
  guessed: boolean;
}

const usage = rowUsage(currentPlatform());

/** What Hangar knows of a model beyond LocalAI's listing. */
export interface RowFacts {
  /** What its backend reports to LocalAI as its memory, in bytes (LocalAI's own figure, not the process's RSS). */
  reportedMemory: number | null;
  /** What Hangar last did to it, for the process it did it to. */
  note: { message: string | null; error: string | null } | null;
  /** Why LocalAI cannot be asked now ("LocalAI is not running (since …)"), or null while it answers. */
  down: string | null;
  /** Why it still runs from a replaced tree a swap could not bring it off, or null. */
  notReloaded: string | null;
  /** Why its process is taken to hang (no Health answer in time), or null. */
  silent: string | null;
}

export function modelView(row: ModelRow, backendsDir: string, facts: RowFacts): ProcessView {
  const p = row.process;
  // No process of it on this machine (LocalAI elsewhere): no start time to tell, as a worker's row says ('').
  const startedAt = p?.startedAt ?? '';
  const sampled = p ? usage.sample(p.pid, startedAt) : { cpu: null, rss: null };
  const stale = Boolean(p?.stale || facts.notReloaded);
  const reported = facts.reportedMemory !== null ? ` (LocalAI reports ${mebibytes(facts.reportedMemory)} for it)` : '';
  return {
    model: row.model,
    backend: row.backend,
    pid: p?.pid ?? 0,
    port: p?.port ?? 0,
    dir: p ? join(backendsDir, p.backend) : '',
    startedAt,
    state: facts.down ? (p ? 'unresponsive' : 'exited') : stale ? 'stale' : facts.silent ? 'unresponsive' : facts.note?.error ? 'crashed' : 'ready',
    cwd: !p ? (facts.notReloaded ? 'stale' : 'unknown') : stale ? 'stale' : 'ok',
    cwdReason: facts.notReloaded ?? cwdReason(row, backendsDir),
    procCwd: p?.cwd ?? null,
    loaded: !facts.down,
    policy: 'never',
    restarts: 0,
    restartDelayMs: 0,
    maxRestarts: 0,
    message: facts.down ?? facts.silent ?? `${facts.note?.message ?? 'run by LocalAI'}${reported}`,
    error: facts.note?.error ?? null,
    exit: null,
    cpu: sampled.cpu,
    rss: sampled.rss,
    runBy: 'localai',
    localaiDown: facts.down,
  };
}

function mebibytes(bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024)} MiB`;
}

function cwdReason(row: ModelRow, backendsDir: string): string {
  const p = row.process;
  if (!p) return 'no process of it is visible on this machine (LocalAI runs it in a container or on another machine)';
  if (p.stale) return `LocalAI's process for ${row.model} (pid ${p.pid}): ${p.stale}; LocalAI reuses it on Health alone, so its next request may fail or be served by the old build`;
  const guess = row.guessed ? ' (which process is whose is a guess: LocalAI does not say)' : '';
  return `LocalAI's process for ${row.model} runs from the live tree ${join(backendsDir, p.backend)}${guess}`;
}

/** The version metadata.json gives the backend in `dir`, or null. */
export function backendVersion(backendsDir: string, dir: string): string | null {
  const version = metadata(backendsDir, dir).version;
  return typeof version === 'string' && version ? version : null;
}

/**
 * Where LocalAI's backends and this directory differ: names installed here it does not list (it registers backends
 * only at its start and after its own installs), names it lists that were deleted here (`seen`: installed here once),
 * or nothing in common at all (another directory). Null when they agree.
 */
export function directoryNote(backendsDir: string, listed: string[], seen: ReadonlySet<string>): string | null {
  const here = installed(backendsDir);
  const known = new Set(listed);
  if (here.length > 0 && listed.length > 0 && !here.some((name) => known.has(name))) {
    return `LocalAI's backends are not this node's backends directory: it lists ${sample(listed)}; ${backendsDir} holds ${sample(here)}`;
  }
  const notes: string[] = [];
  const deleted = [...known].filter((name) => seen.has(name) && !here.includes(name));
  if (deleted.length > 0) notes.push(`LocalAI still lists ${sample(deleted)}, deleted from ${backendsDir}: a load of a model on ${deleted.length === 1 ? 'it' : 'them'} waits out its health attempts (about 40 s), then fails, until LocalAI restarts`);
  const unseen = here.filter((name) => !known.has(name));
  if (unseen.length > 0) notes.push(`LocalAI does not list ${sample(unseen)} yet: it registers backends only when it starts, and sees ${unseen.length === 1 ? 'it' : 'them'} after its restart`);
  return notes.length > 0 ? notes.join('; ') : null;
}

function sample(names: string[]): string {
  return names.length > 5 ? `${names.slice(0, 5).join(', ')} and ${names.length - 5} more` : names.join(', ');
}
