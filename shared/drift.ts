// Whether a node runs what the cluster wants of it, as the matrix and `hangar ls --on all` say it: a cell that
// differs from the desired version reads "2.0.0 wanted". Matched by version string, as the node's gallery entries
// carry it.
import { selects } from './selector.ts';
import type { DesiredVersion, NodeConvergence } from './types.ts';

/** The desired version of `backend` that applies to this node, given what it has installed (null: none). */
export function wantedOn(desired: DesiredVersion[], node: { id: string; labels: Record<string, string> }, backend: string, installed: string | null | undefined): DesiredVersion | null {
  const wanted = desired.find((d) => d.backend === backend);
  if (!wanted || !selects(wanted.on, node)) return null;
  // A rollout's version is for the nodes that have the backend; a pin installs it where it is missing.
  if (installed === undefined && !wanted.installMissing) return null;
  return wanted;
}

/** "2.0.0 wanted" when the node's version differs from the one wanted of it, else null. */
export function driftText(desired: DesiredVersion[], node: { id: string; labels: Record<string, string> }, backend: string, installed: string | null | undefined): string | null {
  const wanted = wantedOn(desired, node, backend, installed);
  return wanted && wanted.version !== installed ? `${wanted.version} wanted` : null;
}

/** Why the node is not there yet, as it said itself (not offered, cordoned, gave up), or null. */
export function driftReason(convergence: NodeConvergence[], nodeId: string, backend: string): string | null {
  const said = convergence.find((c) => c.node === nodeId && c.backend === backend);
  return said && said.state !== 'converged' ? (said.reason ?? said.state) : null;
}
