import { useState, type FormEvent } from 'react';
import { driftReason, driftText } from '../../../shared/drift.ts';
import { rollbackNodes } from '../../../shared/rollback-nodes.ts';
import { describeSelector, selects } from '../../../shared/selector.ts';
import type { BackendView, DesiredStateView, NodeConvergence, RolloutNode, RolloutView } from '../../../shared/types.ts';
import { pinVersion, resumeRollout, rollBackRollout, startRollout, unpinVersion, useCluster, type NodeBackends } from '../state/cluster.ts';
import { pinImpact, resumeImpact, rollbackImpact, rolloutImpact, type Impact, type NodeSide } from '../state/impact.ts';
import { nodeKind } from '../../../shared/localai-worker.ts';
import { offeredVersion } from '../../../shared/version-order.ts';
import { unknownSince, useLostSince } from '../state/connection.ts';
import { awayText, machines, pairedWorkerLabel, useNodes, type NodeEntry } from '../state/node.ts';
import { isStale } from '../state/node-backends.ts';
import { Loading } from './BackendsView.tsx';
import { ActionButton } from './ActionButton.tsx';
import { ClusterNodeCard } from './ClusterNodeCard.tsx';
import { ConfirmDialog, ImpactList } from './ConfirmDialog.tsx';
import { useAction } from './useAction.ts';
import { Alert } from './Message.tsx';

const UNDER_WAY: Partial<Record<RolloutView['state'], string>> = { running: 'Upgrading…', 'rolling-back': 'Rolling back…' };

type NameOf = (id: string) => string | undefined;

/** An action waiting for its confirmation: what it will do, and doing it. */
type Asking = { impact: Impact; act: () => void } | null;

/** The cluster at a glance: a card per node, the rollouts that wait for someone, and every backend on every node. */
export function ClusterView() {
  const all = useNodes((s) => s.nodes);
  // A viewer-only host is a machine of the cluster, not one of its nodes: it has its card, no count or column.
  const nodes = machines(all).filter((n) => !n.card?.viewerOnly);
  const viewers = all.filter((n) => n.card?.viewerOnly);
  const nameOf = nodeNames(all);
  const byNode = useCluster((s) => s.byNode);
  const rollouts = useCluster((s) => s.rollouts);
  const desired = useCluster((s) => s.desired);
  const [asking, setAsking] = useState<Asking>(null);
  const read = nodes.some((n) => byNode[n.id]?.backends);
  // The matrix lists backends (and those pinned to be installed); LocalAI's leftovers and kept trees are each node's own business.
  const pinned = desired?.desired.filter((d) => d.installMissing).map((d) => d.backend) ?? [];
  const names = [...new Set([...nodes.flatMap((n) => byNode[n.id]?.backends?.filter((b) => b.kind === 'backend').map((b) => b.name) ?? []), ...pinned])].sort();
  const sides = nodes.map((n) => sideOf(n, byNode[n.id]));
  const latest = (name: string) => rollouts.find((r) => r.backend === name);
  const online = nodes.filter((n) => !n.card || n.card.self || n.card.status === 'online').length;
  const lostAt = useLostSince(useNodes((s) => s.cardsReadAt));
  return (
    <section className="view cluster" aria-labelledby="cluster-title">
      <header className="view-header">
        <h1 id="cluster-title">Cluster</h1>
        <span className="count">
          {nodes.length} node{nodes.length === 1 ? '' : 's'}, {lostAt === null ? `${online} online` : `their states ${unknownSince(lostAt)}`}
        </span>
      </header>
      <div className="cluster-scroll">
        {desired && !desired.available && (
          <p className="alert muted" role="status" data-testid="store-unavailable">
            The cluster keeps no desired versions or rollouts right now: {desired.reason}
          </p>
        )}
        <AwaitingRollouts rollouts={rollouts} sides={sides} said={desired?.nodes ?? []} nameOf={nameOf} ask={setAsking} />
        <div className="node-grid" data-testid="node-grid">
          {[...nodes, ...viewers].map((n) => (
            <ClusterNodeCard key={n.id} node={n} pairedWorker={pairedWorkerLabel(all, n)} />
          ))}
        </div>
        <h2 className="section-title">Backends on every node</h2>
        {!read ? (
          <Loading what="the cluster" />
        ) : (
          <div className="matrix-wrap">
            <table className="table matrix" aria-label="Backends on every node" data-testid="cluster-matrix">
              <thead>
                <tr>
                  <th scope="col" className="backend-col sticky-start">Backend</th>
                  {nodes.map((n, i) => (
                    <th scope="col" key={n.id} className={`node-col${sides[i]!.offline ? ' offline' : ''}`}>
                      <span className="name">{n.label}</span>
                      {nodes.some((o) => o !== n && o.label === n.label) && n.card && <span className="nav-id"> {n.card.id}</span>}
                      {nodeKind(n.card) === 'localai-worker' && <span className="pill kind-worker">LocalAI worker</span>}
                      {pairedWorkerLabel(all, n) && <span className="muted small"> also LocalAI worker {pairedWorkerLabel(all, n)}</span>}
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
                  <BackendMatrixRow key={name} name={name} nodes={nodes} sides={sides} rollout={latest(name)} desired={desired} nameOf={nameOf} ask={setAsking} />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
      {asking && (
        <ConfirmDialog
          open
          title={asking.impact.title}
          confirmLabel={asking.impact.confirmLabel}
          danger={asking.impact.danger}
          onConfirm={asking.act}
          onClose={() => setAsking(null)}
        >
          <ImpactList lines={asking.impact.lines} />
          {asking.impact.rule && (
            <p className="impact-rule" data-testid="impact-rule">
              {asking.impact.rule}
            </p>
          )}
        </ConfirmDialog>
      )}
    </section>
  );
}

/** A node's name by its cluster id, as the cards know it: what a pin or a rollout on chosen nodes is labelled with. */
function nodeNames(all: NodeEntry[]): NameOf {
  const names = new Map(all.flatMap((n) => (n.card ? [[n.card.id, n.label] as const] : [])));
  return (id) => names.get(id);
}

function sideOf(node: NodeEntry, known: NodeBackends | undefined): NodeSide {
  return {
    id: node.card?.id ?? node.id,
    label: node.label,
    offline: node.card !== null && !node.card.self && awayText(node.card) !== null,
    untrusted: node.card?.access === 'not-trusted',
    revoked: node.card?.access === 'revoked',
    backends: known?.backends ?? null,
    worker: node.card?.kind === 'localai-worker',
    cordoned: node.card?.cordoned === true,
  };
}

/** Rollouts whose coordinator stopped: any viewer resumes one, or rolls back what it upgraded. */
function AwaitingRollouts({ rollouts, sides, said, nameOf, ask }: { rollouts: RolloutView[]; sides: NodeSide[]; said: NodeConvergence[]; nameOf: NameOf; ask: (asking: Asking) => void }) {
  const waiting = rollouts.filter((r) => r.state === 'interrupted');
  const resume = useAction(resumeRollout);
  const rollBack = useAction(rollBackRollout);
  if (waiting.length === 0) return null;
  const busy = resume.pending || rollBack.pending;
  return (
    <div className="awaiting" data-testid="interrupted-rollouts">
      {waiting.map((r) => (
        <div key={r.id} className="alert warn" role="status" data-testid={`interrupted-${r.backend}`}>
          <span>
            <b>
              Rollout of {r.backend}
              {r.version ? ` to ${r.version}` : ''} on {describeSelector(r.on, nameOf)} interrupted
            </b>
            : {r.interrupted?.reason}. {summary(r)}
          </span>
          <span className="spacer" />
          <ActionButton
            className="btn small primary"
            unavailable={busy ? 'Starting…' : null}
            onAct={() => ask({ impact: resumeImpact(r, sides), act: () => void resume.run(r.id) })}
            data-testid="resume"
          >
            Resume
          </ActionButton>
          {rollsBack(r, said) && (
            <ActionButton
              className="btn small"
              unavailable={busy ? 'Starting…' : null}
              onAct={() => ask({ impact: rollbackImpact(r, sides, said), act: () => void rollBack.run(r.id) })}
              data-testid="rollback-interrupted"
            >
              Roll back
            </ActionButton>
          )}
          {(resume.error ?? rollBack.error) && (
            <Alert inline>
              {resume.error ?? rollBack.error}
            </Alert>
          )}
        </div>
      ))}
    </div>
  );
}

/** Whether a rollback has a node to take back: one the rollout upgraded, or one its desired version moved later. */
function rollsBack(rollout: RolloutView, said: readonly NodeConvergence[]): boolean {
  return rollbackNodes(rollout, said, () => undefined).some((n) => n.step === 'upgraded');
}

function summary(r: RolloutView): string {
  const count = (step: string) => r.nodes.filter((n) => n.step === step).length;
  const done = count('upgraded');
  const left = count('pending') + count('upgrading');
  return `${done} node${done === 1 ? '' : 's'} upgraded, ${left} to go.`;
}

interface RowProps {
  name: string;
  nodes: NodeEntry[];
  sides: NodeSide[];
  rollout: RolloutView | undefined;
  desired: DesiredStateView | null;
  nameOf: NameOf;
  ask: (asking: Asking) => void;
}

function BackendMatrixRow({ name, nodes, sides, rollout, desired, nameOf, ask }: RowProps) {
  const upgrade = useAction(startRollout);
  const rollBack = useAction(rollBackRollout);
  const unpin = useAction(unpinVersion);
  const [pinning, setPinning] = useState(false);
  const upgradable = sides.some((s) => !s.offline && backendOf(s, name)?.upgradable);
  const underWay = rollout ? UNDER_WAY[rollout.state] : undefined;
  const canRollBack = rollout !== undefined && underWay === undefined && rollout.state !== 'interrupted' && rollsBack(rollout, desired?.nodes ?? []);
  const pin = desired?.desired.find((d) => d.backend === name && d.rollout === null);
  const error = upgrade.error ?? rollBack.error ?? unpin.error;
  return (
    <tr data-testid={`matrix-${name}`}>
      <th scope="row" className="backend-col sticky-start">
        <span className="name">{name}</span>
        {pin && (
          <span className="badge neutral pin" title={`pinned by ${pin.byName ?? `key ${pin.by}`} at ${pin.at}`} data-testid="pinned">
            {pin.version} on {describeSelector(pin.on, nameOf)}
          </span>
        )}
        <div className="matrix-actions">
          {/* Pin first: the actions that come and go with the row's state follow it, so it never moves under the pointer. */}
          <button type="button" className="btn small" aria-expanded={pinning} onClick={() => setPinning(!pinning)} data-testid={`pin-${name}`}>
            Pin
          </button>
          {pin && (
            <ActionButton className="btn small ghost" unavailable={unpin.pending ? 'Unpinning…' : null} onAct={() => void unpin.run(name)} data-testid={`unpin-${name}`}>
              Unpin
            </ActionButton>
          )}
          {(upgradable || underWay) && (
            <ActionButton
              className="btn small primary"
              unavailable={underWay ?? (upgrade.pending ? 'Starting…' : null)}
              onAct={() => ask({ impact: rolloutImpact(name, sides), act: () => void upgrade.run(name) })}
              data-testid={`rollout-${name}`}
            >
              {underWay ?? 'Upgrade on all nodes'}
            </ActionButton>
          )}
          {canRollBack && (
            <ActionButton
              className="btn small"
              unavailable={rollBack.pending ? 'Starting…' : null}
              onAct={() => ask({ impact: rollbackImpact(rollout, sides, desired?.nodes ?? []), act: () => void rollBack.run(rollout.id) })}
              data-testid={`rollback-${name}`}
            >
              Roll back this rollout
            </ActionButton>
          )}
        </div>
        {pinning && <PinForm name={name} nodes={nodes} sides={sides} current={pin?.version ?? null} ask={ask} onDone={() => setPinning(false)} />}
        {rollout && !underWay && (
          <span className="muted small last-rollout" data-testid={`last-rollout-${name}`}>
            last rollout: {rollout.state}
          </span>
        )}
        {error && (
          <Alert className="cell-block">
            {error}
          </Alert>
        )}
      </th>
      {nodes.map((n, i) => (
        <td key={n.id} className={sides[i]!.offline ? 'offline' : undefined}>
          <Cell side={sides[i]!} node={n} name={name} desired={desired} />
          {rollout && <RolloutStep rollout={rollout} side={sides[i]!} self={n.card?.self ?? false} />}
        </td>
      ))}
    </tr>
  );
}

/** Pins a version of a backend on every node, or on the nodes with a label: they install or move to it by themselves. */
function PinForm(props: { name: string; nodes: NodeEntry[]; sides: NodeSide[]; current: string | null; ask: (asking: Asking) => void; onDone: () => void }) {
  const { name, nodes, sides, current, ask, onDone } = props;
  const offered = sides.map((s) => backendOf(s, name)).flatMap((b) => [b?.availableVersion, b?.version]).find((v): v is string => Boolean(v));
  const [version, setVersion] = useState(current ?? offered ?? '');
  const labels = [...new Set(nodes.flatMap((n) => Object.entries(n.card?.labels ?? {}).map(([k, v]) => `label:${k}=${v}`)))].sort();
  const [on, setOn] = useState('all');
  const pin = useAction(pinVersion);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const wanted = version.trim();
    const selected = sides.filter((_, i) => nodes[i]!.card && selects(on, nodes[i]!.card!));
    ask({
      impact: pinImpact(name, wanted, selected),
      act: () => void pin.run(name, wanted, on).then((done) => done && onDone()),
    });
  };
  return (
    <form className="pin-form" onSubmit={submit} data-testid={`pin-form-${name}`}>
      <label>
        <span className="sr-only">Version of {name}</span>
        <input value={version} onChange={(e) => setVersion(e.target.value)} placeholder="version" size={10} required data-testid="pin-version" />
      </label>
      <label>
        <span className="sr-only">On which nodes</span>
        <select value={on} onChange={(e) => setOn(e.target.value)} data-testid="pin-on">
          <option value="all">every node</option>
          {labels.map((l) => (
            <option key={l} value={l}>
              nodes labelled {l.slice('label:'.length)}
            </option>
          ))}
        </select>
      </label>
      <ActionButton submit className="btn small primary" unavailable={pin.pending ? 'Pinning…' : version.trim() === '' ? 'Give the version to pin.' : null} data-testid="pin-submit">
        Pin {name}
      </ActionButton>
      {pin.error && (
        <Alert inline>
          {pin.error}
        </Alert>
      )}
    </form>
  );
}

function Cell({ side, node, name, desired }: { side: NodeSide; node: NodeEntry; name: string; desired: DesiredStateView | null }) {
  if (side.offline) return <span className="muted">{node.card ? awayText(node.card) : 'offline'}</span>;
  if (side.backends === null) return <span className="muted">no answer</span>;
  const backend = backendOf(side, name);
  const drift = desired && node.card ? driftText(desired.desired, node.card, name, backend ? backend.version : undefined) : null;
  const why = drift && desired && node.card ? driftReason(desired.nodes, node.card.id, name) : null;
  const wanted = drift && (
    <span className="badge warn drift" title={why ?? 'the node is moving to it'} data-testid="drift">
      {drift}
      {why && <span className="sr-only">: {why}</span>}
    </span>
  );
  if (!backend) return drift ? <span className="cell-line">{wanted}</span> : <span className="muted">–</span>;
  const stale = backend.processes.filter(isStale).length;
  return (
    <span className="cell-line">
      <span className="mono">{backend.version ?? '?'}</span>
      {backend.upgradable && <span className="badge warn">→ {offeredVersion(backend.version, backend.availableVersion)}</span>}
      {stale > 0 && <span className="badge danger">{stale} stale cwd</span>}
      {wanted}
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
