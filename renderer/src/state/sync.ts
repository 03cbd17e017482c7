// Keeps the stores in step with the node: one full fetch whenever the link (re)opens, then events only.
import { LOCAL_NODE } from '../../../shared/api.ts';
import type { NodeEvent } from '../../../shared/types.ts';
import type { Transport } from '../bridge/transport.ts';
import { backendsStore, fromSnapshot, withBackend, withoutBackend, withProcess, withoutProcess } from './backends.ts';
import { galleryStore, withEntries } from './gallery.ts';
import { fromJobs, jobsStore, withJob } from './jobs.ts';
import { appendLog } from './logs.ts';
import { nodeStore, setGalleryProblems, setLocalInfo } from './node.ts';
import { bridge, errorMessage, setBridge } from './session.ts';

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
  const offStatus = transport.onStatus((status) => {
    if (status === 'open') void refetch();
  });
  if (transport.status() === 'open') void refetch();

  return {
    refetch,
    stop() {
      offEvents();
      offStatus();
    },
  };
}

export async function fetchGallery(refresh = false): Promise<void> {
  try {
    const entries = await bridge().gallery({ node: LOCAL_NODE, refresh });
    galleryStore.setState({ entries, loaded: true, error: null });
  } catch (error) {
    galleryStore.setState({ loaded: true, error: errorMessage(error) });
  }
}
