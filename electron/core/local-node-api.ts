import type { NodeApi } from '../../shared/api.ts';
import type { NodeCounts, NodeEvent } from '../../shared/types.ts';

/** This machine's node as its hosts use it: the contract, what its card counts, and its events. */
export type LocalNodeApi = NodeApi & {
  /** What the card counts (but the drift, which the cluster knows), from the node's index: a heartbeat never lists backends. */
  counts(): Promise<Omit<NodeCounts, 'drift'>>;
  on(event: 'event', listener: (e: NodeEvent) => void): unknown;
  off(event: 'event', listener: (e: NodeEvent) => void): unknown;
};
