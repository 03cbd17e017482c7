import { nodeMethods, type NodeApi, type NodeMethod, type NodeRef } from '../../shared/api.ts';
import type { NodeCard } from '../../shared/types.ts';
import type { NodeProvider } from './provider.ts';

/**
 * Every node method, sent to the provider that owns the node it names, else to `fallback`: the kind that says best
 * why a node is unknown (the cluster's members, which may not have been heard from yet), or this machine's node alone.
 */
export function routeTo(providers: NodeProvider[], fallback: NodeProvider): NodeApi {
  const route = async (method: NodeMethod, req: NodeRef): Promise<unknown> => {
    const owner = providers.find((p) => p.owns(req.node)) ?? fallback;
    return owner.call(method, req);
  };
  return Object.fromEntries(nodeMethods.map((method) => [method, (req: NodeRef) => route(method, req)])) as unknown as NodeApi;
}

/** Every provider's cards, in the host's order, each kind's as the other kinds describe them. */
export async function cardsOf(providers: NodeProvider[]): Promise<NodeCard[]> {
  const cards = (await Promise.all(providers.map((p) => p.cards()))).flat();
  return providers.reduce((all, p) => p.describe?.(all) ?? all, cards);
}
