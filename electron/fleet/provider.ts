import type { NodeMethod, NodeRef } from '../../shared/api.ts';
import type { NodeCard, NodeEvent } from '../../shared/types.ts';

/**
 * One kind of node a host serves: this machine's node, the cluster's other Hangar members, LocalAI workers. The router
 * asks the kinds in turn which owns a node; nothing outside fleet/ asks which kind a node is, its card says what it
 * `can` do. A new kind of node is one more provider.
 */
export interface NodeProvider {
  readonly kind: string;
  /** Whether calls naming `node` are this kind's. */
  owns(node: string): boolean;
  /** The cards of its nodes, each with what it `can` do. */
  cards(): Promise<NodeCard[]>;
  /** What this kind says on the other kinds' cards (a LocalAI worker on a Hangar node's machine names it there). */
  describe?(cards: NodeCard[]): NodeCard[];
  call(method: NodeMethod, req: NodeRef): Promise<unknown>;
  /** Its nodes' events, for as long as it runs. */
  onEvent(listener: (event: NodeEvent) => void): void;
  close(): Promise<void>;
}
