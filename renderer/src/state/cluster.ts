// The Cluster view's data: the backend × node matrix (pulled from each online node) and the host's rollouts (events).
import { createStore, useStore } from 'zustand';
import { LOCAL_NODE } from '../../../shared/api.ts';
import type { BackendView, NodeCard, NodeEvent, RolloutView } from '../../../shared/types.ts';
import { nodeStore } from './node.ts';
import { bridge, errorMessage } from './session.ts';

export interface MatrixColumn {
  node: string;
  /** null while not fetched or offline; a string when the node did not answer. */
  backends: BackendView[] | string | null;
}

export interface ClusterState {
  columns: MatrixColumn[];
  rollouts: RolloutView[];
  /** True while the Cluster view is shown: only then do backend changes anywhere refetch the matrix. */
  watching: boolean;
}

export const clusterStore = createStore<ClusterState>(() => ({ columns: [], rollouts: [], watching: false }));

const MATRIX_REFRESH_MS = 300;
let matrixTimer: ReturnType<typeof setTimeout> | undefined;

export async function fetchMatrix(): Promise<void> {
  const nodes = nodeStore.getState().nodes;
  const columns = await Promise.all(nodes.map(async (n): Promise<MatrixColumn> => {
    if (n.card?.status === 'offline' && !n.card.self) return { node: n.id, backends: null };
    try {
      return { node: n.id, backends: await bridge().backends({ node: n.id }) };
    } catch (error) {
      return { node: n.id, backends: errorMessage(error) };
    }
  }));
  clusterStore.setState({ columns });
}

export function matrixChanged(): void {
  if (!clusterStore.getState().watching) return;
  clearTimeout(matrixTimer);
  matrixTimer = setTimeout(() => void fetchMatrix(), MATRIX_REFRESH_MS);
}

export function watchMatrix(on: boolean): void {
  clusterStore.setState({ watching: on });
  if (on) void fetchMatrix();
}

/** The card a member event carries, or null when the card is of another node than the event names: that one is ignored. */
export function memberCard(event: Extract<NodeEvent, { type: 'member' }>): NodeCard | null {
  return event.member.id === event.node ? event.member : null;
}

export async function fetchRollouts(): Promise<void> {
  clusterStore.setState({ rollouts: await bridge().rollouts({ node: LOCAL_NODE }) });
}

export function applyRollout(rollout: RolloutView): void {
  clusterStore.setState((s) => ({ rollouts: [rollout, ...s.rollouts.filter((r) => r.id !== rollout.id)].sort((a, b) => b.startedAt.localeCompare(a.startedAt)) }));
  if (rollout.state !== 'running' && rollout.state !== 'rolling-back') matrixChanged();
}

export async function startRollout(name: string): Promise<RolloutView> {
  const rollout = await bridge().rollout({ node: LOCAL_NODE, name });
  applyRollout(rollout);
  return rollout;
}

export async function rollBackRollout(id: string): Promise<RolloutView> {
  const rollout = await bridge().rollbackRollout({ node: LOCAL_NODE, id });
  applyRollout(rollout);
  return rollout;
}

export function useCluster<T>(selector: (state: ClusterState) => T): T {
  return useStore(clusterStore, selector);
}
