// Which of the processes found on this machine is which of LocalAI's loaded models (LocalAI does not say).
import { concreteBackend } from './backend-names.ts';
import type { LoadedModel } from './api.ts';
import type { ServerProcess } from './processes.ts';
import type { ModelRow } from './views.ts';

/**
 * Each loaded model with its process: the one Hangar saw start for it, else the only process of its backend's
 * directory, else (several models on one backend) the processes in turn. Linear in models and processes: LocalAI's
 * listing is not trusted to be small.
 */
export function assignProcesses(backendsDir: string, loaded: LoadedModel[], found: ServerProcess[], learned: Map<number, string>): Map<string, ModelRow> {
  const rows = new Map<string, ModelRow>();
  const byModel = new Map<string, ServerProcess>();
  const free = new Map<string, ServerProcess[]>();
  for (const p of found) {
    const model = learned.get(p.pid);
    if (model !== undefined) byModel.set(model, p);
    else free.set(p.backend, [...(free.get(p.backend) ?? []), p]);
  }
  const dirs = new Map<string, string>();
  const dirOf = (backend: string) => {
    if (!dirs.has(backend)) dirs.set(backend, concreteBackend(backendsDir, backend));
    return dirs.get(backend)!;
  };
  const sharing = new Map<string, number>();
  for (const m of loaded) if (m.backend) sharing.set(dirOf(m.backend), (sharing.get(dirOf(m.backend)) ?? 0) + 1);
  for (const m of loaded) {
    const dir = m.backend ? dirOf(m.backend) : null;
    const own = byModel.get(m.id);
    const mine = own ?? (dir !== null ? free.get(dir)?.shift() : firstFree(free));
    rows.set(m.id, { model: m.id, backend: m.backend ?? mine?.backend ?? '', process: mine ?? null, guessed: !own && dir !== null && (sharing.get(dir) ?? 0) > 1 });
  }
  return rows;
}

function firstFree(free: Map<string, ServerProcess[]>): ServerProcess | undefined {
  for (const list of free.values()) if (list.length > 0) return list.shift();
  return undefined;
}
