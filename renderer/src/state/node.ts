import { createStore, useStore } from 'zustand';
import type { GalleryProblem, NodeInfo } from '../../../shared/types.ts';
import { LOCAL_NODE } from '../../../shared/api.ts';

/** One entry of the nodes sidebar. Only this machine for now; a cluster adds more. */
export interface NodeEntry {
  id: string;
  label: string;
  info: NodeInfo | null;
}

export interface NodeState {
  nodes: NodeEntry[];
  selected: string;
  /** Why the initial fetch failed, when it did. */
  error: string | null;
}

export const nodeStore = createStore<NodeState>(() => ({
  nodes: [{ id: LOCAL_NODE, label: 'This machine', info: null }],
  selected: LOCAL_NODE,
  error: null,
}));

export function setLocalInfo(info: NodeInfo): void {
  nodeStore.setState((s) => ({ nodes: s.nodes.map((n) => (n.id === LOCAL_NODE ? { ...n, info } : n)), error: null }));
}

export function setGalleryProblems(problems: GalleryProblem[]): void {
  nodeStore.setState((s) => ({
    nodes: s.nodes.map((n) => (n.id === LOCAL_NODE && n.info ? { ...n, info: { ...n.info, galleryProblems: problems } } : n)),
  }));
}

export function useNodes<T>(selector: (state: NodeState) => T): T {
  return useStore(nodeStore, selector);
}
