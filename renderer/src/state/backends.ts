import { createStore, useStore } from 'zustand';
import type { BackendView, ProcessView } from '../../../shared/types.ts';

/** A backend row without its processes: those live in `processes`, so a process event touches one chip only. */
export type BackendInfo = Omit<BackendView, 'processes'>;

export interface BackendsState {
  loaded: boolean;
  /** Sorted; a new array only when a backend appears or goes. */
  names: string[];
  byName: Record<string, BackendInfo>;
  /** Sorted model names per backend; a new array only when that backend's set of models changes. */
  modelsByBackend: Record<string, string[]>;
  processes: Record<string, ProcessView>;
  /** When the full fetch was read (ms since epoch); events keep it current only while the link to the agent holds. */
  readAt: number | null;
}

export const emptyBackends: BackendsState = { loaded: false, names: [], byName: {}, modelsByBackend: {}, processes: {}, readAt: null };

const NO_MODELS: string[] = [];

function info(backend: BackendView): BackendInfo {
  const { processes: _processes, ...rest } = backend;
  return rest;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}

/** The state after a full fetch. Processes listed by `processes()` win over the copies inside each backend. */
export function fromSnapshot(backends: BackendView[], processes: ProcessView[]): BackendsState {
  let state: BackendsState = { ...emptyBackends, loaded: true };
  for (const backend of backends) state = withBackend(state, backend);
  for (const process of processes) state = withProcess(state, process);
  return state;
}

/** A backend event: its view replaces the row, and its process list is authoritative for that backend. */
export function withBackend(state: BackendsState, backend: BackendView): BackendsState {
  const names = state.byName[backend.name] ? state.names : [...state.names, backend.name].sort();
  const processes = { ...state.processes };
  for (const model of state.modelsByBackend[backend.name] ?? NO_MODELS) delete processes[model];
  const modelsByBackend = { ...state.modelsByBackend };
  for (const process of backend.processes) {
    const previous = state.processes[process.model];
    if (previous && previous.backend !== backend.name) modelsByBackend[previous.backend] = without(modelsByBackend[previous.backend], process.model);
    processes[process.model] = process;
  }
  const models = backend.processes.map((p) => p.model).sort();
  const before = state.modelsByBackend[backend.name] ?? NO_MODELS;
  modelsByBackend[backend.name] = sameList(before, models) ? before : models;
  return { ...state, names, byName: { ...state.byName, [backend.name]: info(backend) }, modelsByBackend, processes };
}

export function withoutBackend(state: BackendsState, name: string): BackendsState {
  if (!state.byName[name]) return state;
  const { [name]: _gone, ...byName } = state.byName;
  const { [name]: models = NO_MODELS, ...modelsByBackend } = state.modelsByBackend;
  const processes = { ...state.processes };
  for (const model of models) delete processes[model];
  return { ...state, names: state.names.filter((n) => n !== name), byName, modelsByBackend, processes };
}

export function withProcess(state: BackendsState, process: ProcessView): BackendsState {
  const previous = state.processes[process.model];
  let modelsByBackend = state.modelsByBackend;
  if (previous?.backend !== process.backend) {
    modelsByBackend = { ...modelsByBackend, [process.backend]: [...(modelsByBackend[process.backend] ?? NO_MODELS), process.model].sort() };
    if (previous) modelsByBackend[previous.backend] = without(modelsByBackend[previous.backend], process.model);
  }
  return { ...state, modelsByBackend, processes: { ...state.processes, [process.model]: process } };
}

export function withoutProcess(state: BackendsState, model: string): BackendsState {
  const previous = state.processes[model];
  if (!previous) return state;
  const { [model]: _gone, ...processes } = state.processes;
  const modelsByBackend = { ...state.modelsByBackend, [previous.backend]: without(state.modelsByBackend[previous.backend], model) };
  return { ...state, modelsByBackend, processes };
}

function without(list: string[] | undefined, value: string): string[] {
  return (list ?? NO_MODELS).filter((v) => v !== value);
}

export const backendsStore = createStore<BackendsState>(() => emptyBackends);

export function useBackends<T>(selector: (state: BackendsState) => T): T {
  return useStore(backendsStore, selector);
}
