import { LOCAL_NODE, type HangarApi } from '../../shared/api.ts';
import { parseSelector, selects } from '../../shared/selector.ts';
import type { NodeCard } from '../../shared/types.ts';
import { HangarError } from '../../shared/errors.ts';

export const ALL_NODES = 'all';

/** A node a command acts on: `node` is what calls name (`local` for this host's own node). */
export interface Target {
  node: string;
  card: NodeCard;
}

/** `--on` names a set of nodes: `all`, `label:KEY=VALUE`, or names and ids joined with commas. */
export function namesASet(on: string | undefined): on is string {
  return on === ALL_NODES || on?.startsWith('label:') === true || (on?.includes(',') ?? false);
}

/**
 * `--on NODE` to the node id calls name: an id, else a unique name; this host's own node is `local`. A name two
 * nodes share is an error that lists their ids.
 */
export async function resolveNode(api: Pick<HangarApi, 'nodes' | 'clusterStatus'>, on: string | undefined): Promise<string> {
  if (on === undefined || on === LOCAL_NODE) return LOCAL_NODE;
  const cards = await api.nodes({ node: LOCAL_NODE });
  try {
    return targetOf(pick(cards, on)).node;
  } catch (error) {
    // A host that serves only its own node hears of no other: that, not the name, is why.
    if ((await api.clusterStatus({ node: LOCAL_NODE })).role === 'node') {
      throw new HangarError('forbidden', 'this host joined the cluster as a node only (--cluster-role node): it serves its own node and calls no other');
    }
    throw error;
  }
}

/** `--on all`, `--on label:gpu=nvidia` or `--on a,b`: every node named, once each, in the cluster's order. */
export async function resolveTargets(api: Pick<HangarApi, 'nodes'>, on: string): Promise<Target[]> {
  const cards = await api.nodes({ node: LOCAL_NODE });
  // A viewer-only host's own machine is named, never swept in.
  const members = cards.filter((c) => !c.viewerOnly);
  if (on === ALL_NODES) return members.map(targetOf);
  if (on.startsWith('label:')) {
    const selector = parseSelector(on);
    const chosen = members.filter((c) => selects(selector, c));
    if (chosen.length === 0) throw new HangarError('not-found', `no node has the label ${on.slice('label:'.length)} (see hangar nodes)`);
    return chosen.map(targetOf);
  }
  const chosen = new Set(on.split(',').map((part) => pick(cards, part.trim()).id));
  return cards.filter((c) => chosen.has(c.id)).map(targetOf);
}

/**
 * What `--on` selects, as the cluster keeps it with a pin or a rollout: `all` and `label:…` as they are (nodes that
 * join later are selected too), names and ids as the ids they are now.
 */
export async function selectorOf(api: Pick<HangarApi, 'nodes'>, on: string | undefined): Promise<string> {
  if (on === undefined || on === ALL_NODES) return ALL_NODES;
  if (on.startsWith('label:')) {
    parseSelector(on);
    return on;
  }
  return `nodes:${(await resolveTargets(api, on)).map((t) => t.card.id).join(',')}`;
}

/**
 * The nodes a name names. A name is only a label, and anyone on the NATS server can send a card with any name: when
 * exactly one of the nodes that share it acts for this host (this host, one that trusts it, one open to any caller,
 * none revoked), the name means that one.
 */
export function named(cards: NodeCard[], name: string): NodeCard[] {
  const all = cards.filter((c) => c.name === name);
  const ours = all.filter((c) => c.access !== 'not-trusted' && c.access !== 'revoked');
  return all.length > 1 && ours.length === 1 ? ours : all;
}

function pick(cards: NodeCard[], on: string): NodeCard {
  if (on === LOCAL_NODE) {
    const self = cards.find((c) => c.self);
    if (self) return self;
  }
  const byId = cards.find((c) => c.id === on);
  const chosen = byId ? [byId] : named(cards, on);
  if (chosen.length === 0) throw new HangarError('not-found', `no node "${on}" in the cluster (see hangar nodes)`);
  if (chosen.length > 1) throw new HangarError('invalid-request', `${chosen.length} nodes are named "${on}": pass one of their ids (${chosen.map((c) => c.id).join(', ')})`);
  return chosen[0]!;
}

function targetOf(card: NodeCard): Target {
  return { node: card.self ? LOCAL_NODE : card.id, card };
}
