// What Hangar can do on a LocalAI worker, over the worker's own control protocol, and why the rest is off. The host
// refuses the rest with this reason, and the UI shows it on every action it turns off.
import type { NodeMethod } from './api.ts';
import type { NodeCard, NodeKind } from './types.ts';

/** What a LocalAI worker's actions need that its protocol does not give: Hangar on its machine. */
export const NEEDS_HANGAR_AGENT = 'run a Hangar agent beside this worker to get them';

/** What each method that needs Hangar on the machine is, in words, for its refusal. */
const NEEDS_AGENT_WHAT: Partial<Record<NodeMethod, string>> = {
  rollback: 'Rollback',
  respawn: 'Respawn',
  respawnBackend: 'Respawn',
  restart: 'Restart',
  logs: 'Logs',
  scan: 'Stale-cwd detection',
  stopProcess: 'Stopping a stale process',
  load: 'Loading a model from Hangar',
  chooseVariant: 'Picking a build',
  resolveLeftover: "LocalAI's leftover directories",
  settings: "Hangar's node settings",
  updateSettings: "Hangar's node settings",
  cancelJob: 'Cancelling',
  resources: "Reading the machine's resources",
};

/** Why `method`, which a LocalAI worker does not answer (it is not in its card's `can`), is off there. */
export function workerRefusal(method: NodeMethod): string {
  if (method === 'cancelJob') return "LocalAI's worker protocol cannot cancel an install once it is sent";
  // Draining is LocalAI's own (its registry decides where requests go), and Hangar never writes to it.
  if (method === 'drain') return "A LocalAI worker is drained in LocalAI: its frontend's admin pages (Hangar never changes LocalAI's registry)";
  return `${NEEDS_AGENT_WHAT[method] ?? 'This'} needs Hangar on the worker's machine: ${NEEDS_HANGAR_AGENT}`;
}

/** Whether the node `card` describes answers `method`. */
export function canDo(card: Pick<NodeCard, 'can'>, method: NodeMethod): boolean {
  return !card.can || card.can.includes(method);
}

/** Why `method` is off on the node `card` describes, or null when the node answers it. */
export function refusalOf(card: Pick<NodeCard, 'can' | 'kind' | 'name'> | null | undefined, method: NodeMethod): string | null {
  if (!card || canDo(card, method)) return null;
  return nodeKind(card) === 'localai-worker' ? workerRefusal(method) : `${card.name} does not answer ${method}`;
}

export function nodeKind(card: Pick<NodeCard, 'kind'> | null | undefined): NodeKind {
  return card?.kind ?? 'hangar';
}

/** LocalAI's words for a worker that does not take calls now; its actions stay off until it is healthy. */
export function workerStatusReason(status: string): string | null {
  switch (status) {
    case 'healthy':
      return null;
    case 'pending':
      return 'pending in LocalAI (waiting for an admin to approve it)';
    case 'draining':
      return 'draining in LocalAI (it takes no new work)';
    case 'offline':
      return 'offline in LocalAI (no heartbeat from it)';
    case 'unhealthy':
      return 'unhealthy in LocalAI (it stopped answering)';
    case 'registering':
      return 'registering with LocalAI';
    default:
      return `"${status.slice(0, 40)}" in LocalAI`;
  }
}
