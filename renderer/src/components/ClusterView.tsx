import { useState } from 'react';
import type { BackendView, RolloutNode, RolloutView } from '../../../shared/types.ts';
import { rollBackRollout, startRollout, useCluster, type NodeBackends } from '../state/cluster.ts';
import { rollbackImpact, rolloutImpact, type Impact, type NodeSide } from '../state/impact.ts';
import { useNodes, type NodeEntry } from '../state/node.ts';
import { isStale } from '../state/node-backends.ts';
import { Loading } from './BackendsView.tsx';
import { ActionButton } from './ActionButton.tsx';
import { ConfirmDialog, ImpactList } from './ConfirmDialog.tsx';
import { useAction } from './useAction.ts';

const UNDER_WAY: Partial<Record<RolloutView['state'], string>> = { running: 'Upgrading…', 'rolling-back': 'Rolling back…' };

/** Every backend on every node, with a rolling upgrade per backend and each node's step in it. */
export function ClusterView() {
  const nodes = useNodes((s) => s.nodes);
  const byNode = useCluster((s) => s.byNode);
  const rollouts = useCluster((s) => s.rollouts);
  const read = nodes.some((n) => byNode[n.id]?.backends);
  // The matrix lists backends; LocalAI's leftovers and kept trees are each node's own business.
  const names = [...new Set(nodes.flatMap((n) => byNode[n.id]?.backends?.filter((b) => b.kind === 'backend').map((b) => b.name) ?? []))].sort();
  const sides = nodes.map((n) => sideOf(n, byNode[n.id]));
  const latest = (name: string) => rollouts.find((r) => r.backend === name);
  return (
    <section className="view" aria-labelledby="cluster-title">
      <header className="view-header">
        <h1 id="cluster-title">Cluster</h1>
        <span className="count">
          {nodes.length} node{nodes.length === 1 ? '' : 's'}, {nodes.filter((n) => n.card?.status !== 'offline').length} online
        </span>
      </header>
      {!read ? (
        <Loading what="the cluster" />
      ) : (
        <div className="table-wrap">
          <table className="table matrix" aria-label="Backends on every node" data-testid="cluster-matrix">
            <thead>
              <tr>
                <th scope="col" className="backend-col sticky-start">Backend</th>
                {nodes.map((n) => (
                  <th scope="col" key={n.id} className={`node-col${n.card?.status === 'offline' ? ' offline' : ''}`}>
                    <span className="name">{n.label}</span>
                    {nodes.some((o) => o !== n && o.label === n.label) && n.card && <span className="nav-id"> {n.card.id}</span>}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {names.length === 0 && (
                <tr>
                  <td colSpan={nodes.length + 1} className="muted">No backend is installed on any node.</td>
                </tr>
              )}
              {names.map((name) => (
                <BackendMatrixRow key={name} name={name} nodes={nodes} sides={sides} rollout={latest(name)} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function sideOf(node: NodeEntry, known: NodeBackends | undefined): NodeSide {
  return {
    id: node.card?.id ?? node.id,
    label: node.label,
    offline: node.card !== null && !node.card.self && node.card.status === 'offline',
    untrusted: node.card?.access === 'not-trusted',
    backends: known?.backends ?? null,
  };
}

function BackendMatrixRow({ name, nodes, sides, rollout }: { name: string; nodes: NodeEntry[]; sides: NodeSide[]; rollout: RolloutView | undefined }) {
  const upgrade = useAction(startRollout);
  const rollBack = useAction(rollBackRollout);
  const [confirming, setConfirming] = useState<{ impact: Impact; act: () => void } | null>(null);
  const upgradable = sides.some((s) => !s.offline && backendOf(s, name)?.upgradable);
  const underWay = rollout ? UNDER_WAY[rollout.state] : undefined;
  const canRollBack = rollout !== undefined && underWay === undefined && rollout.nodes.some((n) => n.step === 'upgraded');
  const ask = (impact: Impact, act: () => void) => setConfirming({ impact, act });
  const error = upgrade.error ?? rollBack.error;
  return (
    <tr data-testid={`matrix-${name}`}>
      <th scope="row" className="backend-col sticky-start">
        <span className="name">{name}</span>
        <div className="matrix-actions">
          {(upgradable || underWay) && (
            <ActionButton
              className="btn small primary"
              unavailable={underWay ?? (upgrade.pending ? 'Starting…' : null)}
              onAct={() => ask(rolloutImpact(name, sides), () => void upgrade.run(name))}
              data-testid={`rollout-${name}`}
            >
              {underWay ?? 'Upgrade on all nodes'}
            </ActionButton>
          )}
          {canRollBack && (
            <ActionButton
              className="btn small"
              unavailable={rollBack.pending ? 'Starting…' : null}
              onAct={() => ask(rollbackImpact(rollout, sides), () => void rollBack.run(rollout.id))}
              data-testid={`rollback-${name}`}
            >
              Roll back this rollout
            </ActionButton>
          )}
        </div>
        {rollout && !underWay && (
          <span className="muted small last-rollout" data-testid={`last-rollout-${name}`}>
            last rollout: {rollout.state}
          </span>
        )}
        {error && (
          <p className="alert error cell-block" role="alert">
            {error}
          </p>
        )}
        {confirming && (
          <ConfirmDialog
            open
            title={confirming.impact.title}
            confirmLabel={confirming.impact.confirmLabel}
            danger={confirming.impact.danger}
            onConfirm={confirming.act}
            onClose={() => setConfirming(null)}
          >
            <ImpactList lines={confirming.impact.lines} />
            {confirming.impact.rule && (
              <p className="impact-rule" data-testid="impact-rule">
                {confirming.impact.rule}
              </p>
            )}
          </ConfirmDialog>
        )}
      </th>
      {nodes.map((n, i) => (
        <td key={n.id} className={sides[i]!.offline ? 'offline' : undefined}>
          <Cell side={sides[i]!} name={name} />
          {rollout && <RolloutStep rollout={rollout} side={sides[i]!} self={n.card?.self ?? false} />}
        </td>
      ))}
    </tr>
  );
}

function Cell({ side, name }: { side: NodeSide; name: string }) {
  if (side.offline) return <span className="muted">offline</span>;
  if (side.backends === null) return <span className="muted">no answer</span>;
  const backend = backendOf(side, name);
  if (!backend) return <span className="muted">–</span>;
  const stale = backend.processes.filter(isStale).length;
  return (
    <span className="cell-line">
      <span className="mono">{backend.version ?? '?'}</span>
      {backend.upgradable && <span className="badge warn">→ {backend.availableVersion ?? 'newer'}</span>}
      {stale > 0 && <span className="badge danger">{stale} stale cwd</span>}
    </span>
  );
}

const STEP_TONE: Partial<Record<RolloutNode['step'], string>> = { failed: 'danger-soft', upgraded: 'ok', 'rolled-back': 'ok' };

/** A node's step as a short state; why it failed or was passed by goes beneath, in full. */
function RolloutStep({ rollout, side, self }: { rollout: RolloutView; side: NodeSide; self: boolean }) {
  const step = rollout.nodes.find((s) => s.id === side.id || (self && s.id === 'local'));
  if (!step || step.step === 'unchanged') return null;
  return (
    <>
      <span className={`badge ${STEP_TONE[step.step] ?? 'neutral'} rollout-step`} data-testid="rollout-step">
        {step.step}
      </span>
      {step.reason && (
        <span className={`cell-block${step.step === 'failed' ? ' error' : ' muted'}`} data-testid="rollout-reason">
          {step.reason}
        </span>
      )}
    </>
  );
}

function backendOf(side: NodeSide, name: string): BackendView | undefined {
  return side.backends?.find((b) => b.name === name);
}
