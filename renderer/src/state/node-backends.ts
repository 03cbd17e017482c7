// A node's backends as one list of views, patched by that node's events exactly as the rows are: what the Cluster
// matrix shows for every node, and what the sidebar counts for the nodes not on screen.
import type { BackendView, NodeEvent, ProcessView } from '../../../shared/types.ts';

/** What the sidebar shows beside a node: stale processes and backends with an upgrade on offer. */
export interface NodeTally {
  stale: number;
  upgradable: number;
}

/**
 * The one rule for a stale process, wherever it is shown or counted: it runs, out of a working directory that was
 * replaced (a process that ended runs nothing, and starts again in the live directory).
 */
export function isStale(process: Pick<ProcessView, 'state'>): boolean {
  return process.state === 'stale';
}

export function tallyOf(backends: readonly Pick<BackendView, 'upgradable'>[], processes: readonly Pick<ProcessView, 'state'>[]): NodeTally {
  return { stale: processes.filter(isStale).length, upgradable: backends.filter((b) => b.upgradable).length };
}

export function tallyOfViews(backends: readonly BackendView[]): NodeTally {
  return tallyOf(backends, backends.flatMap((b) => b.processes));
}

const byName = (a: BackendView, b: BackendView) => a.name.localeCompare(b.name);

/** The list after one of the node's events; other events leave it as it is (the same array). */
export function patchBackends(list: BackendView[], event: NodeEvent): BackendView[] {
  switch (event.type) {
    case 'backend':
      return [...list.filter((b) => b.name !== event.backend.name), event.backend].sort(byName);
    case 'backend-removed':
      return list.filter((b) => b.name !== event.name);
    case 'process': {
      const { process } = event;
      return list.map((b) => {
        const others = b.processes.filter((p) => p.model !== process.model);
        if (b.name === process.backend) return { ...b, processes: [...others, process] };
        return others.length === b.processes.length ? b : { ...b, processes: others };
      });
    }
    case 'process-removed':
      return list.map((b) => (b.processes.some((p) => p.model === event.model) ? { ...b, processes: b.processes.filter((p) => p.model !== event.model) } : b));
    default:
      return list;
  }
}
