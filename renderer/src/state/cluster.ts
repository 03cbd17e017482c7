// Every node's backends, the cluster's rollouts and desired versions, and this host's link to the cluster. Each
// node's list is read when the link opens or the node comes online, then kept by that node's events (the ones that
// update the rows), never re-read on a timer: the Cluster matrix shows it, and the sidebar counts the nodes that are
// not on screen from it. Rollouts, desired versions and the link are kept by their own events.
import { createStore, useStore } from 'zustand';
import { LOCAL_NODE } from '../../../shared/api.ts';
import type { BackendView, ClusterStatusView, DesiredStateView, DesiredVersion, NodeCard, NodeEvent, RolloutView } from '../../../shared/types.ts';
import { patchBackends } from './node-backends.ts';
import { bridge } from './session.ts';
import { messageOf } from '../../../shared/error-text.ts';

export interface NodeBackends {
  /** The last list known (kept while the node is offline); null until it was first read. */
  backends: BackendView[] | null;
  /** Why the last read failed, or null. */
  error: string | null;
}

export interface ClusterState {
  byNode: Record<string, NodeBackends>;
  rollouts: RolloutView[];
  desired: DesiredStateView | null;
  /** This host's link: null until read. */
  status: ClusterStatusView | null;
}

export const clusterStore = createStore<ClusterState>(() => ({ byNode: {}, rollouts: [], desired: null, status: null }));

/** Reads under way, per node: the events that arrive meanwhile are replayed on top of what the read returns. */
const reading = new Map<string, { buffered: NodeEvent[] }>();

function setNode(node: string, patch: Partial<NodeBackends>): void {
  clusterStore.setState((s) => ({ byNode: { ...s.byNode, [node]: { backends: null, error: null, ...s.byNode[node], ...patch } } }));
}

export async function readNode(node: string): Promise<void> {
  const read = { buffered: [] as NodeEvent[] };
  reading.set(node, read);
  try {
    const backends = await bridge().backends({ node });
    if (reading.get(node) === read) setNode(node, { backends: read.buffered.reduce(patchBackends, backends), error: null });
  } catch (error) {
    if (reading.get(node) === read) setNode(node, { error: messageOf(error) });
  } finally {
    if (reading.get(node) === read) reading.delete(node);
  }
}

/** A backend or process event of any node. */
export function applyNodeEvent(event: NodeEvent): void {
  reading.get(event.node)?.buffered.push(event);
  const known = clusterStore.getState().byNode[event.node]?.backends;
  if (!known) return;
  const next = patchBackends(known, event);
  if (next !== known) setNode(event.node, { backends: next });
}

/** The card a member event carries, or null when the card is of another node than the event names: that one is ignored. */
export function memberCard(event: Extract<NodeEvent, { type: 'member' }>): NodeCard | null {
  return event.member.id === event.node ? event.member : null;
}

/** The rollouts, the desired versions and the link, read again in full. */
export async function fetchCluster(): Promise<void> {
  const b = bridge();
  const [rollouts, desired, status] = await Promise.all([b.rollouts({ node: LOCAL_NODE }), b.desired({ node: LOCAL_NODE }), b.clusterStatus({ node: LOCAL_NODE })]);
  clusterStore.setState({ rollouts, desired, status });
}

export function applyDesired(desired: DesiredStateView): void {
  clusterStore.setState({ desired });
}

export function applyClusterStatus(status: ClusterStatusView): void {
  clusterStore.setState({ status });
}

/** Why the cluster cannot be reached from this host, or null (also null for a host in no cluster). */
export function linkLost(state: ClusterState): string | null {
  const s = state.status;
  return s && s.role !== null && !s.link.connected ? (s.link.reason ?? 'no answer') : null;
}

export function applyRollout(rollout: RolloutView): void {
  clusterStore.setState((s) => ({ rollouts: [rollout, ...s.rollouts.filter((r) => r.id !== rollout.id)].sort((a, b) => b.startedAt.localeCompare(a.startedAt)) }));
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

export async function resumeRollout(id: string): Promise<RolloutView> {
  const rollout = await bridge().resumeRollout({ node: LOCAL_NODE, id });
  applyRollout(rollout);
  return rollout;
}

export function pinVersion(name: string, version: string, on: string): Promise<DesiredVersion> {
  return bridge().pin({ node: LOCAL_NODE, name, version, on });
}

export function unpinVersion(name: string): Promise<void> {
  return bridge().unpin({ node: LOCAL_NODE, name });
}

/** Cordons (or uncordons) a node; its card says so with its next heartbeat. */
export async function setCordoned(node: string, cordoned: boolean): Promise<void> {
  await bridge().updateSettings({ node, settings: { cordoned } });
}

export function drainNode(node: string): Promise<string[]> {
  return bridge().drain({ node });
}

export function useCluster<T>(selector: (state: ClusterState) => T): T {
  return useStore(clusterStore, selector);
}
