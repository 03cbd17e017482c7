import { createStore, useStore } from 'zustand';
import type { GalleryProblem, NodeCard, NodeInfo } from '../../../shared/types.ts';
import { LOCAL_NODE, type NodeMethod } from '../../../shared/api.ts';
import { nodeKind, refusalOf } from '../../../shared/localai-worker.ts';

/** One entry of the nodes sidebar: this host's own node (`local`) and every other member of its cluster. */
export interface NodeEntry {
  /** What calls name: `local` for this host's node, the member's id for the others. */
  id: string;
  label: string;
  info: NodeInfo | null;
  /** What the cluster says of it; null until the host answered `nodes`. */
  card: NodeCard | null;
}

export interface NodeState {
  nodes: NodeEntry[];
  selected: string;
  /** Why the initial fetch failed, when it did. */
  error: string | null;
  /** When the host's member list was read (ms since epoch); member events keep it current while the link holds. */
  cardsReadAt: number | null;
}

export const nodeStore = createStore<NodeState>(() => ({
  nodes: [{ id: LOCAL_NODE, label: 'This machine', info: null, card: null }],
  selected: LOCAL_NODE,
  error: null,
  cardsReadAt: null,
}));

/** The node every view and action is about. */
export function selectedNode(): string {
  return nodeStore.getState().selected;
}

export function selectNode(id: string): void {
  if (nodeStore.getState().selected !== id) nodeStore.setState({ selected: id, error: null });
}

export function setSelectedInfo(info: NodeInfo): void {
  nodeStore.setState((s) => ({ nodes: s.nodes.map((n) => (n.id === s.selected ? { ...n, info } : n)), error: null }));
}

export function setGalleryProblems(problems: GalleryProblem[]): void {
  nodeStore.setState((s) => ({
    nodes: s.nodes.map((n) => (n.id === s.selected && n.info ? { ...n, info: { ...n.info, galleryProblems: problems } } : n)),
  }));
}

/** The host's member list: its own card stays `local`, the others keep what was already known of them. */
export function setCards(cards: NodeCard[]): void {
  nodeStore.setState((s) => {
    const known = new Map(s.nodes.map((n) => [n.id, n]));
    const nodes = cards.map((card) => entryFor(card, known));
    if (!nodes.some((n) => n.id === LOCAL_NODE)) nodes.unshift(known.get(LOCAL_NODE)!);
    return { nodes: sortEntries(nodes), cardsReadAt: Date.now() };
  });
}

export function applyMember(card: NodeCard): void {
  nodeStore.setState((s) => {
    const known = new Map(s.nodes.map((n) => [n.id, n]));
    const entry = entryFor(card, known);
    return { nodes: sortEntries([...s.nodes.filter((n) => n.id !== entry.id), entry]) };
  });
}

/** A node the host no longer lists; the views go back to this machine's own when it was the one shown. */
export function removeMember(id: string): void {
  if (id === LOCAL_NODE) return;
  nodeStore.setState((s) => ({ nodes: s.nodes.filter((n) => n.id !== id), ...(s.selected === id && { selected: LOCAL_NODE }) }));
}

export function selectedCard(state: NodeState): NodeCard | null {
  return state.nodes.find((n) => n.id === state.selected)?.card ?? null;
}

/** Whether the selected node is a LocalAI worker (its views show what its protocol gives). */
export function isWorkerSelected(state: NodeState): boolean {
  return nodeKind(selectedCard(state)) === 'localai-worker';
}

/** Why `method` is off on the selected node because of what it is (a LocalAI worker), or null. */
export function useRefusal(method: NodeMethod): string | null {
  return useNodes((s) => refusalOf(selectedCard(s), method));
}

/**
 * The machines to list: a LocalAI worker on a listed Hangar node's machine and backends directory is that machine
 * (the Hangar node says it is also the worker), so it is not listed on its own.
 */
export function machines(nodes: NodeEntry[]): NodeEntry[] {
  const ids = new Set(nodes.map((n) => n.card?.id));
  return nodes.filter((n) => !n.card?.localai?.pairedWith || !ids.has(n.card.localai.pairedWith));
}

/** The label of the LocalAI worker a Hangar node shares its machine and backends directory with, or null. */
export function pairedWorkerLabel(nodes: NodeEntry[], node: NodeEntry): string | null {
  const worker = node.card?.pairedWorker;
  return worker === undefined ? null : (nodes.find((o) => o.card?.id === worker)?.label ?? null);
}

/** Why actions on the selected node are off ("offline (it shut down)", "unknown (no broker)"), or null when it is online. */
export function offlineReason(state: NodeState): string | null {
  const card = state.nodes.find((n) => n.id === state.selected)?.card;
  return card && !card.self ? awayText(card) : null;
}

/** How a node that cannot be acted on is away, in words; null for one that is online. */
export function awayText(card: NodeCard): string | null {
  if (card.status === 'online') return null;
  // A LocalAI worker that takes no calls says so in LocalAI's words ("draining in LocalAI (it takes no new work)").
  if (card.localai && card.localai.status !== 'healthy' && card.reason) return card.reason;
  return card.status === 'unknown' ? `unknown (${card.reason ?? 'no broker'})` : `offline (${card.reason ?? 'no heartbeat'})`;
}

function entryFor(card: NodeCard, known: Map<string, NodeEntry>): NodeEntry {
  const id = card.self ? LOCAL_NODE : card.id;
  const before = known.get(id);
  return { id, label: card.name, info: before?.info ?? null, card };
}

function sortEntries(nodes: NodeEntry[]): NodeEntry[] {
  return nodes.sort((a, b) => Number(b.id === LOCAL_NODE) - Number(a.id === LOCAL_NODE) || a.label.localeCompare(b.label) || a.id.localeCompare(b.id));
}

export function useNodes<T>(selector: (state: NodeState) => T): T {
  return useStore(nodeStore, selector);
}
