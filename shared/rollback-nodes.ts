// Which nodes a rollout's rollback covers, as the host that runs it and the UI that asks first both count them. A
// rollout records its version as the cluster's desired one: a node it passed by (cordoned, away, or not yet joined)
// moves to that version by itself once it can, and says so in its own status. Rolling the rollout back undoes that too.
import type { NodeConvergence, RolloutNode, RolloutView } from './types.ts';

/** The reason kept on a node its rollout's desired version moved later: the rollback's table says why it is there. */
export const convergedLater = (version: string | null) => `converged to ${version ?? 'its version'} by itself after the rollout passed it by`;

export function isConvergedLater(step: RolloutNode): boolean {
  return step.reason === convergedLater(step.to);
}

/**
 * The rollout's nodes, each one that a node's own status says the rollout's desired version moved (and that runs it
 * still) marked upgraded, from what it ran before; one the rollout never listed (it joined later) added.
 */
export function rollbackNodes(rollout: RolloutView, said: readonly NodeConvergence[], nameOf: (id: string) => string | undefined): RolloutNode[] {
  const nodes = rollout.nodes.map((n) => ({ ...n }));
  if (rollout.version === null) return nodes;
  for (const c of said) {
    if (c.movedBy?.rollout !== rollout.id || c.backend !== rollout.backend || c.state !== 'converged' || c.wanted !== rollout.version || c.version !== rollout.version) continue;
    const later = { step: 'upgraded' as const, reason: convergedLater(rollout.version), from: c.movedBy.from, to: rollout.version };
    const known = nodes.find((n) => n.id === c.node);
    if (!known) nodes.push({ id: c.node, name: nameOf(c.node) ?? c.node, ...later });
    else if (known.step !== 'upgraded' && known.step !== 'upgrading') Object.assign(known, later);
  }
  return nodes;
}
