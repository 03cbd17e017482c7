// Keeps the stores in step with the node: one full fetch whenever the link (re)opens, then events only.
import { LOCAL_NODE } from '../../../shared/api.ts';
import type { JobView, NodeEvent } from '../../../shared/types.ts';
import type { Transport } from '../bridge/transport.ts';
import { backendsStore, fromSnapshot, withBackend, withoutBackend, withProcess, withoutProcess } from './backends.ts';
import { galleryStore } from './gallery.ts';
import { fromJobs, isActive, jobsStore, withJob } from './jobs.ts';
import { setConnection } from './connection.ts';
import { appendLog } from './logs.ts';
import { nodeStore, setGalleryProblems, setLocalInfo } from './node.ts';
import { bridge, errorMessage, setBridge } from './session.ts';
import { remember, toast } from './toasts.ts';

/** Installed/upgradable flags in the gallery follow backend changes; refetch once a burst of them settles. */
const GALLERY_REFRESH_MS = 300;

export interface Sync {
  /** Fetches everything again (the Retry after a failed start). */
  refetch(): Promise<void>;
  stop(): void;
}

export function startSync(transport: Transport): Sync {
  setBridge(transport.bridge);
  let buffered: NodeEvent[] | null = null;
  let generation = 0;
  let galleryTimer: ReturnType<typeof setTimeout> | undefined;

  function refreshGallerySoon() {
    clearTimeout(galleryTimer);
    galleryTimer = setTimeout(() => void fetchGallery(), GALLERY_REFRESH_MS);
  }

  function apply(event: NodeEvent) {
    switch (event.type) {
      case 'job':
        noteFinished(jobsStore.getState().byId[event.job.id], event.job);
        jobsStore.setState((s) => withJob(s, event.job));
        break;
      case 'backend':
        backendsStore.setState((s) => withBackend(s, event.backend));
        refreshGallerySoon();
        break;
      case 'backend-removed':
        backendsStore.setState((s) => withoutBackend(s, event.name));
        refreshGallerySoon();
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
    const ref = { node: LOCAL_NODE };
    try {
      const [info, backends, processes, jobs] = await Promise.all([b.info(ref), b.backends(ref), b.processes(ref), b.jobs(ref), fetchGallery()]);
      if (mine !== generation) return;
      setLocalInfo(info);
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
  setConnection(transport.status());
  if (transport.status() === 'open') void refetch();

  return {
    refetch,
    stop() {
      offEvents();
      offStatus();
      clearTimeout(galleryTimer);
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
    const entries = await bridge().gallery({ node: LOCAL_NODE, refresh });
    galleryStore.setState({ entries, loaded: true, error: null });
  } catch (error) {
    galleryStore.setState({ loaded: true, error: errorMessage(error) });
  }
}
