// Keeps the stores in step with the node: one full fetch whenever the link (re)opens, then events only.
import { LOCAL_NODE } from '../../../shared/api.ts';
import type { JobView, NodeEvent } from '../../../shared/types.ts';
import type { Transport } from '../bridge/transport.ts';
import { backendsStore, emptyBackends, fromSnapshot, withBackend, withoutBackend, withProcess, withoutProcess } from './backends.ts';
import { setConnection } from './connection.ts';
import { galleryStore, withEntries } from './gallery.ts';
import { settingsStore } from './settings.ts';
import { fromJobs, isActive, jobsStore, withJob } from './jobs.ts';
import { appendLog } from './logs.ts';
import { applyRollout, fetchRollouts, matrixChanged, memberCard } from './cluster.ts';
import { closeLogs } from './logs.ts';
import { applyMember, nodeStore, offlineReason, selectedNode, setCards, setGalleryProblems, setSelectedInfo } from './node.ts';
import { bridge, errorMessage, setBridge } from './session.ts';
import { remember, toast } from './toasts.ts';

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
      if (!card) return;
      const wasOffline = offlineReason(nodeStore.getState()) !== null;
      applyMember(card);
      // The node on screen came back: its views start again from a fresh snapshot.
      if (wasOffline && offlineReason(nodeStore.getState()) === null) void refetch();
      return;
    }
    if (event.type === 'rollout') return applyRollout(event.rollout);
    if (event.type === 'backend' || event.type === 'backend-removed' || event.type === 'process' || event.type === 'process-removed') matrixChanged();
    // The views show one node at a time; the others' events reach only the sidebar and the Cluster view.
    if (event.node !== selectedNode()) return;
    switch (event.type) {
      case 'job':
        noteFinished(jobsStore.getState().byId[event.job.id], event.job);
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

  /** Events that arrive while a snapshot is on its way are replayed on top of it. */
  async function refetch() {
    const mine = ++generation;
    buffered = [];
    const b = bridge();
    const ref = { node: selectedNode() };
    void b.nodes({ node: LOCAL_NODE }).then(setCards, () => undefined);
    void fetchRollouts().catch(() => undefined);
    // An offline node cannot answer; it is fetched when it is back.
    if (offlineReason(nodeStore.getState()) !== null) {
      buffered = null;
      return;
    }
    try {
      const [info, backends, processes, jobs] = await Promise.all([b.info(ref), b.backends(ref), b.processes(ref), b.jobs(ref), fetchGallery()]);
      if (mine !== generation) return;
      setSelectedInfo(info);
      backendsStore.setState(fromSnapshot(backends, processes), true);
      jobsStore.setState(fromJobs(jobs), true);
    } catch (error) {
      if (mine === generation) nodeStore.setState({ error: errorMessage(error) });
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

const FINISHED: Partial<Record<JobView['state'], string>> = { done: 'finished', failed: 'failed', cancelled: 'was cancelled' };

/** A job seen running that now ended goes to the notifications; a failure also pops up. */
function noteFinished(before: JobView | undefined, after: JobView): void {
  const ended = FINISHED[after.state];
  if (!before || !isActive(before) || !ended) return;
  const outcome = after.state === 'done' && after.phase !== 'done' ? `: ${after.phase}` : '';
  const text = `${after.kind} ${after.backend} ${ended}${outcome}${after.error ? `: ${after.error}` : ''}`;
  if (after.state === 'failed') toast('error', text);
  else remember('info', text);
}

export async function fetchGallery(refresh = false): Promise<void> {
  try {
    const entries = await bridge().gallery({ node: selectedNode(), refresh });
    galleryStore.setState({ entries, loaded: true, error: null });
  } catch (error) {
    galleryStore.setState({ loaded: true, error: errorMessage(error) });
  }
}
