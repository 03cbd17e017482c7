import { NEEDS_HANGAR_AGENT } from '../../../shared/localai-worker.ts';
import { isWorkerSelected, useNodes } from '../state/node.ts';

/** Above a LocalAI worker's views: what Hangar does over its protocol, and what needs Hangar on its machine. */
export function WorkerNote() {
  const worker = useNodes(isWorkerSelected);
  const name = useNodes((s) => s.nodes.find((n) => n.id === s.selected)?.label ?? '');
  if (!worker) return null;
  return (
    <p className="muted worker-note" data-testid="worker-needs-agent">
      {name} is a LocalAI worker: install, upgrade, delete, stop and unload go over its own protocol. Rollback, respawn, logs and stale-cwd
      detection need Hangar on its machine: {NEEDS_HANGAR_AGENT}.
    </p>
  );
}
