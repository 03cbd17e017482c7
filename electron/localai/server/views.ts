// A LocalAI server's models as Hangar's views show processes, and what its backends directory says of them.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProcessView } from '../../../shared/types.ts';
import { placeOf } from '../../core/supervisor/scan.ts';
import { processStartedAt, UsageSampler } from '../../core/supervisor/usage.ts';
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

const usage = new UsageSampler();

export function modelView(row: ModelRow, backendsDir: string, memory: number | null, note: { message: string | null; error: string | null } | null): ProcessView {
  const p = row.process;
  // No process of it on this machine (LocalAI elsewhere): no start time to tell, as a worker's row says ('').
  const startedAt = (p && processStartedAt(p.pid)) ?? '';
  const sampled = p ? usage.sample(p.pid, startedAt) : { cpu: null, rss: null };
  return {
    model: row.model,
    backend: row.backend,
    pid: p?.pid ?? 0,
    port: p?.port ?? 0,
    dir: p ? join(backendsDir, p.backend) : '',
    startedAt,
    state: p?.stale ? 'stale' : 'ready',
    cwd: !p ? 'unknown' : p.stale ? 'stale' : 'ok',
    cwdReason: cwdReason(row, backendsDir),
    procCwd: p?.cwd ?? null,
    loaded: true,
    policy: 'never',
    restarts: 0,
    restartDelayMs: 0,
    maxRestarts: 0,
    message: note?.message ?? 'run by LocalAI',
    error: note?.error ?? null,
    exit: null,
    cpu: sampled.cpu,
    rss: memory ?? sampled.rss,
    runBy: 'localai',
  };
}

function cwdReason(row: ModelRow, backendsDir: string): string {
  const p = row.process;
  if (!p) return 'no process of it is visible on this machine (LocalAI runs it in a container or on another machine)';
  if (p.stale) return `LocalAI's process for ${row.model} (pid ${p.pid}): ${p.stale}; LocalAI reuses it on Health alone, so its next request may fail or be served by the old build`;
  const guess = row.guessed ? ' (which process is whose is a guess: LocalAI does not say)' : '';
  return `LocalAI's process for ${row.model} runs from the live tree ${join(backendsDir, p.backend)}${guess}`;
}

/** The directory LocalAI runs for `name`: its own, a meta's build, or the backend whose alias it is (as LocalAI lists them). */
export function concreteBackend(backendsDir: string, name: string): string {
  if (existsSync(join(backendsDir, name, 'run.sh'))) return name;
  const meta = metadata(backendsDir, name).meta_backend_for;
  if (typeof meta === 'string' && meta) return meta;
  return installed(backendsDir).find((dir) => metadata(backendsDir, dir).alias === name) ?? name;
}

/** The version metadata.json gives the backend in `dir`, or null. */
export function backendVersion(backendsDir: string, dir: string): string | null {
  const version = metadata(backendsDir, dir).version;
  return typeof version === 'string' && version ? version : null;
}

/**
 * Where LocalAI's backends and this directory differ: names installed here it does not list (it registers backends
 * only at its start and after its own installs), or nothing in common at all (another directory). Null when they agree.
 */
export function directoryNote(backendsDir: string, listed: string[]): string | null {
  const here = installed(backendsDir);
  const known = new Set(listed);
  if (here.length > 0 && listed.length > 0 && !here.some((name) => known.has(name))) {
    return `LocalAI's backends are not this node's backends directory: it lists ${sample(listed)}; ${backendsDir} holds ${sample(here)}`;
  }
  const unseen = here.filter((name) => !known.has(name));
  return unseen.length > 0 ? `LocalAI does not list ${sample(unseen)} yet: it registers backends only when it starts, and sees ${unseen.length === 1 ? 'it' : 'them'} after its restart` : null;
}

/** The live backend directories (those with a run.sh). */
function installed(backendsDir: string): string[] {
  let names: string[] = [];
  try {
    names = readdirSync(backendsDir);
  } catch {
    return [];
  }
  return names.filter((name) => !name.startsWith('.') && !placeOf(name).aside && existsSync(join(backendsDir, name, 'run.sh'))).sort();
}

function metadata(backendsDir: string, dir: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(readFileSync(join(backendsDir, dir, 'metadata.json'), 'utf8')) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function sample(names: string[]): string {
  return names.length > 5 ? `${names.slice(0, 5).join(', ')} and ${names.length - 5} more` : names.join(', ');
}
