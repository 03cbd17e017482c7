import { LOCAL_NODE, type HangarApi } from '../../shared/api.ts';

export const ALL_NODES = 'all';

/**
 * `--on NODE` to the node id calls name: an id, else a unique name; this host's own node is `local`. A name two
 * nodes share is an error that lists their ids.
 */
export async function resolveNode(api: Pick<HangarApi, 'nodes'>, on: string | undefined): Promise<string> {
  if (on === undefined || on === LOCAL_NODE || on === ALL_NODES) return on ?? LOCAL_NODE;
  const cards = await api.nodes({ node: LOCAL_NODE });
  const byId = cards.find((c) => c.id === on);
  const named = byId ? [byId] : cards.filter((c) => c.name === on);
  if (named.length === 0) throw new Error(`no node "${on}" in the cluster (see hangar nodes)`);
  if (named.length > 1) throw new Error(`${named.length} nodes are named "${on}": pass one of their ids (${named.map((c) => c.id).join(', ')})`);
  return named[0]!.self ? LOCAL_NODE : named[0]!.id;
}
