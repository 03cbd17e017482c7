import { useEffect } from 'react';
import type { BackendView, RolloutView } from '../../../shared/types.ts';
import { rollBackRollout, startRollout, useCluster, watchMatrix, type MatrixColumn } from '../state/cluster.ts';
import { useNodes, type NodeEntry } from '../state/node.ts';
import { Loading } from './BackendsView.tsx';
import { useAction } from './useAction.ts';

const ACTIVE = new Set(['running', 'rolling-back']);

/** Every backend on every node, with a rolling upgrade per backend and each node's step in it. */
export function ClusterView() {
  const nodes = useNodes((s) => s.nodes);
  const columns = useCluster((s) => s.columns);
  const rollouts = useCluster((s) => s.rollouts);
  useEffect(() => {
    watchMatrix(true);
    return () => watchMatrix(false);
  }, [nodes.length]);
  const byNode = new Map(columns.map((c) => [c.node, c]));
  const names = [...new Set(columns.flatMap((c) => (Array.isArray(c.backends) ? c.backends.filter((b) => b.kind === 'backend').map((b) => b.name) : [])))].sort();
  const latest = (name: string) => rollouts.find((r) => r.backend === name);
  return (
    <section className="view" aria-labelledby="cluster-title">
      <header className="view-header">
        <h1 id="cluster-title">Cluster</h1>
        <span className="count">
          {nodes.length} node{nodes.length === 1 ? '' : 's'}, {nodes.filter((n) => n.card?.status !== 'offline').length} online
        </span>
      </header>
      {columns.length === 0 ? (
        <Loading what="the cluster" />
      ) : (
        <div className="table-wrap">
          <table className="table matrix" aria-label="Backends on every node" data-testid="cluster-matrix">
            <thead>
              <tr>
                <th scope="col">Backend</th>
                {nodes.map((n) => (
                  <th scope="col" key={n.id} className={n.card?.status === 'offline' ? 'offline' : undefined}>
                    {n.label}
                    {nodes.some((o) => o !== n && o.label === n.label) && n.card && <span className="nav-id"> {n.card.id}</span>}
                  </th>
                ))}
                <th scope="col" />
              </tr>
            </thead>
            <tbody>
              {names.length === 0 && (
                <tr>
                  <td colSpan={nodes.length + 2} className="muted">No backend is installed on any node.</td>
                </tr>
              )}
              {names.map((name) => (
                <BackendMatrixRow key={name} name={name} nodes={nodes} byNode={byNode} rollout={latest(name)} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function BackendMatrixRow({ name, nodes, byNode, rollout }: { name: string; nodes: NodeEntry[]; byNode: Map<string, MatrixColumn>; rollout: RolloutView | undefined }) {
  const upgrade = useAction(startRollout);
  const rollBack = useAction(rollBackRollout);
  const upgradable = nodes.some((n) => backendOn(byNode.get(n.id), name)?.upgradable);
  const running = rollout !== undefined && ACTIVE.has(rollout.state);
  const canRollBack = rollout !== undefined && !running && rollout.nodes.some((n) => n.step === 'upgraded');
  return (
    <tr data-testid={`matrix-${name}`}>
      <th scope="row">{name}</th>
      {nodes.map((n) => (
        <td key={n.id} className={n.card?.status === 'offline' ? 'offline' : undefined}>
          <Cell column={byNode.get(n.id)} name={name} />
          {rollout && <RolloutStep rollout={rollout} node={n} />}
        </td>
      ))}
      <td className="actions">
        {upgradable && (
          <button type="button" className="btn small primary" disabled={running || upgrade.pending} onClick={() => void upgrade.run(name)} data-testid={`rollout-${name}`}>
            {running ? 'Upgrading…' : 'Upgrade on all nodes'}
          </button>
        )}
        {canRollBack && (
          <button type="button" className="btn small" disabled={rollBack.pending} onClick={() => void rollBack.run(rollout.id)} data-testid={`rollback-${name}`}>
            Roll back this rollout
          </button>
        )}
        {rollout && !running && <span className="muted small"> last rollout: {rollout.state}</span>}
        {(upgrade.error ?? rollBack.error) && <span className="alert error inline" role="alert">{upgrade.error ?? rollBack.error}</span>}
      </td>
    </tr>
  );
}

function Cell({ column, name }: { column: MatrixColumn | undefined; name: string }) {
  if (!column || column.backends === null) return <span className="muted">offline</span>;
  if (typeof column.backends === 'string') return <span className="muted" title={column.backends}>no answer</span>;
  const backend = backendOn(column, name);
  if (!backend) return <span className="muted">–</span>;
  const stale = backend.processes.filter((p) => p.cwd === 'stale').length;
  return (
    <span>
      <span className="mono">{backend.version ?? '?'}</span>
      {backend.upgradable && <span className="badge warn"> → {backend.availableVersion ?? 'newer'}</span>}
      {stale > 0 && <span className="badge danger"> {stale} stale cwd</span>}
    </span>
  );
}

function RolloutStep({ rollout, node }: { rollout: RolloutView; node: NodeEntry }) {
  const step = rollout.nodes.find((s) => s.id === node.card?.id || (node.card?.self && s.id === 'local'));
  if (!step || step.step === 'unchanged') return null;
  const tone = step.step === 'failed' ? 'danger' : step.step === 'upgraded' || step.step === 'rolled-back' ? 'ok' : 'neutral';
  return (
    <span className={`badge ${tone} rollout-step`} title={step.reason ?? undefined} data-testid="rollout-step">
      {step.step}
      {step.reason ? `: ${step.reason}` : ''}
    </span>
  );
}

function backendOn(column: MatrixColumn | undefined, name: string): BackendView | undefined {
  return Array.isArray(column?.backends) ? column.backends.find((b) => b.name === name) : undefined;
}
