// Keeps the stores in step with the node: one full fetch whenever the link (re)opens, then events only.
import { LOCAL_NODE } from '../../../shared/api.ts';
import type { JobView, NodeCard, NodeEvent, RolloutView } from '../../../shared/types.ts';
import type { Transport } from '../bridge/transport.ts';
import { backendsStore, emptyBackends, fromSnapshot, withBackend, withoutBackend, withProcess, withoutProcess } from './backends.ts';
import { setConnection } from './connection.ts';
import { galleryStore, withEntries } from './gallery.ts';
import { settingsStore } from './settings.ts';
import { fromJobs, isActive, jobsStore, withJob } from './jobs.ts';
import { appendLog } from './logs.ts';
import { applyClusterStatus, applyDesired, applyNodeEvent, applyRollout, clusterStore, fetchCluster, memberCard, readNode } from './cluster.ts';
import { closeLogs } from './logs.ts';
import { applyMember, nodeStore, offlineReason, removeMember, selectedNode, setCards, setGalleryProblems, setSelectedInfo } from './node.ts';
import { applyJob, jobText, readJobs, rolloutNotice } from './notifications.ts';
import { bridge, setBridge } from './session.ts';
import { toast } from './toasts.ts';
import { messageOf } from '../../../shared/error-text.ts';

export interface Sync {
  /** Fetches everything again (the Retry after a failed start). */
  refetch(): Promise<void>;
  stop(): void;
}

export function startSync(transport: Transport): Sync {
  setBridge(transport.bridge);
  let buffered: NodeEvent[] | null = null;
  let generation = 0;
  function apply(event: NodeEvent) {
    if (event.type === 'member') {
      const card = memberCard(event);
      return card ? applyMemberEvent(card) : undefined;
    }
    if (event.type === 'member-removed') return removeMember(event.node);
    if (event.type === 'rollout') {
      noteRolloutEnd(clusterStore.getState().rollouts.find((r) => r.id === event.rollout.id), event.rollout);
      return applyRollout(event.rollout);
    }
    if (event.type === 'desired') return applyDesired(event.desired);
    if (event.type === 'cluster-status') return applyClusterStatus(event.status);
    // Every node's backends and jobs are kept for the sidebar, the Cluster view and the notifications.
    applyNodeEvent(event);
    if (event.type === 'job') {
      if (event.node === selectedNode()) noteFailure(jobsStore.getState().byId[event.job.id], event.job);
      applyJob(event.node, event.job);
    }
    // The views show one node at a time.
    if (event.node !== selectedNode()) return;
    switch (event.type) {
      case 'job':
        jobsStore.setState((s) => withJob(s, event.job));
        break;
      case 'backend':
        backendsStore.setState((s) => withBackend(s, event.backend));
        break;
      case 'backend-removed':
        backendsStore.setState((s) => withoutBackend(s, event.name));
        break;
      case 'settings':
        settingsStore.setState({ view: event.settings });
        break;
      case 'gallery-entries':
        galleryStore.setState((s) => ({ entries: withEntries(s.entries, event.entries) }));
        break;
      case 'process':
        backendsStore.setState((s) => withProcess(s, event.process));
        break;
      case 'process-removed':
        backendsStore.setState((s) => withoutProcess(s, event.model));
        break;
      case 'log':
        appendLog(event.line);
        break;
      case 'gallery-changed':
        setGalleryProblems(event.problems);
        void fetchGallery();
        break;
    }
  }

  /** A member seen for the first time, or back online, is read afresh; the node on screen starts its views again. */
  function applyMemberEvent(member: NodeCard) {
    const before = nodeStore.getState();
    const id = member.self ? LOCAL_NODE : member.id;
    const wasAway = before.nodes.find((n) => n.id === id)?.card?.status !== 'online';
    const wasOffline = offlineReason(before) !== null;
    applyMember(member);
    if (wasAway && member.status === 'online') readEverything(id);
    if (wasOffline && offlineReason(nodeStore.getState()) === null) void refetch();
  }

  /** Events that arrive while a snapshot is on its way are replayed on top of it. */
  async function refetch() {
    const mine = ++generation;
    buffered = [];
    const b = bridge();
    const ref = { node: selectedNode() };
    void b.nodes({ node: LOCAL_NODE }).then((cards) => {
      setCards(cards);
      // A node that is away cannot answer; it is read when it is back.
      for (const n of nodeStore.getState().nodes) if (!n.card || n.card.self || n.card.status === 'online') readEverything(n.id);
    }, () => undefined);
    void fetchCluster().catch(() => undefined);
    // An offline node cannot answer; it is fetched when it is back.
    if (offlineReason(nodeStore.getState()) !== null) {
      buffered = null;
      return;
    }
    try {
      const [info, backends, processes, jobs] = await Promise.all([b.info(ref), b.backends(ref), b.processes(ref), b.jobs(ref), fetchGallery()]);
      if (mine !== generation) return;
      setSelectedInfo(info);
      backendsStore.setState({ ...fromSnapshot(backends, processes), readAt: Date.now() }, true);
      jobsStore.setState(fromJobs(jobs), true);
    } catch (error) {
      if (mine === generation) nodeStore.setState({ error: messageOf(error) });
    } finally {
      if (mine === generation) {
        const replay = buffered ?? [];
        buffered = null;
        replay.forEach(apply);
      }
    }
  }

  const offEvents = transport.bridge.onEvent((event) => {
    if (buffered) buffered.push(event);
    else apply(event);
  });
  // After a lost link the state is read again in full, never patched from what was seen before.
  const offStatus = transport.onStatus((status) => {
    setConnection(status);
    if (status === 'open') void refetch();
  });
  // Another node chosen in the sidebar: its views start from its own snapshot.
  const offSelection = nodeStore.subscribe((state, before) => {
    if (state.selected === before.selected) return;
    closeLogs();
    backendsStore.setState(emptyBackends, true);
    void refetch();
  });
  setConnection(transport.status());
  if (transport.status() === 'open') void refetch();

  return {
    refetch,
    stop() {
      offEvents();
      offStatus();
      offSelection();
    },
  };
}

/** Reads a node's backends and jobs (a node seen for the first time, or back). */
function readEverything(node: string): void {
  void readNode(node);
  void readJobs(node).catch(() => undefined);
}

/** A job on screen seen running that now failed pops up; every ended job is in the notifications already. */
function noteFailure(before: JobView | undefined, after: JobView): void {
  if (before && isActive(before) && after.state === 'failed') toast('error', jobText(after));
}

/** A rollout seen running that now ended with a failure pops up. */
function noteRolloutEnd(before: RolloutView | undefined, after: RolloutView): void {
  const notice = rolloutNotice(after);
  if (before && rolloutNotice(before) === null && notice?.kind === 'error') toast('error', notice.text);
}

export async function fetchGallery(refresh = false): Promise<void> {
  try {
    const entries = await bridge().gallery({ node: selectedNode(), refresh });
    galleryStore.setState({ entries, loaded: true, error: null });
  } catch (error) {
    galleryStore.setState({ loaded: true, error: messageOf(error) });
  }
}
