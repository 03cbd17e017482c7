import { nodeKind } from '../../../shared/localai-worker.ts';
import type { NodeCard, NodeInfo } from '../../../shared/types.ts';
import { iecBytes } from '../../../shared/progress.ts';
import { useBackends, type BackendsState } from '../state/backends.ts';
import { useCluster, type ClusterState } from '../state/cluster.ts';
import { awayText, machines, pairedWorkerLabel, selectNode, useNodes, type NodeEntry } from '../state/node.ts';
import { isStale, tallyOf, tallyOfViews, type NodeTally } from '../state/node-backends.ts';
import { ConnectionDot, LinkWord } from './ConnectionDot.tsx';
import type { View } from '../state/ui.ts';
import { showView, uiStore, useUi } from '../state/ui.ts';

const VIEWS: { id: View; label: string }[] = [
  { id: 'backends', label: 'Backends' },
  { id: 'gallery', label: 'Gallery' },
  { id: 'processes', label: 'Processes' },
  { id: 'settings', label: 'Settings' },
];

function nodeSummary(label: string, info: NodeInfo): string {
  const platform = `${info.platform}/${info.arch}`;
  return info.name && info.name !== label ? `${info.name} · ${platform}` : platform;
}

export function Sidebar() {
  const nodes = useNodes((s) => s.nodes);
  const selected = useNodes((s) => s.selected);
  const view = useUi((s) => s.view);
  const installed = useBackends((s) => (s.loaded ? s.names.filter((n) => s.byName[n]?.kind === 'backend').length : null));
  const stale = useBackends((s) => Object.values(s.processes).filter(isStale).length);
  const crashed = useBackends((s) => Object.values(s.processes).filter((p) => p.state === 'crashed' || p.state === 'crash-looping').length);
  const current = nodes.find((n) => n.id === selected);
  const listed = machines(nodes);
  return (
    <aside className="sidebar">
      <div className="brand">
        <span className="brand-mark" aria-hidden="true" />
        Hangar
      </div>
      <nav aria-label="Nodes" className="nav-section">
        <h2 className="nav-title">Nodes</h2>
        <ul>
          <li>
            <button
              type="button"
              className="nav-item"
              aria-current={view === 'cluster' ? 'page' : undefined}
              onClick={() => showView('cluster')}
              data-testid="nav-cluster"
            >
              <span className="nav-label">
                Cluster
                <span className="nav-sub">every backend on every node</span>
              </span>
            </button>
          </li>
          {listed.map((node) => (
            <li key={node.id}>
              <NodeItem
                node={node}
                selected={view !== 'cluster' && node.id === selected}
                onScreen={node.id === selected}
                twin={nodes.some((o) => o !== node && o.label === node.label)}
                pairedWorker={pairedWorkerLabel(nodes, node)}
              />
            </li>
          ))}
        </ul>
      </nav>
      <nav aria-label="Views" className="nav-section">
        <ul>
          {VIEWS.map((v) => (
            <li key={v.id}>
              <button
                type="button"
                className="nav-item"
                aria-current={v.id === view ? 'page' : undefined}
                onClick={() => showView(v.id)}
                data-testid={`nav-${v.id}`}
              >
                <span className="nav-label">{v.label}</span>
                <span className="nav-side">
                  {v.id === 'backends' && installed !== null && <span className="nav-count">{installed}</span>}
                  {v.id === 'processes' && stale > 0 && (
                    <span className="nav-count danger" data-testid="nav-stale" title={`${stale} stale`}>
                      {stale} stale
                    </span>
                  )}
                  {v.id === 'processes' && crashed > 0 && (
                    <span className="nav-count danger" data-testid="nav-crashed" title={`${crashed} crashed`}>
                      {crashed} crashed
                    </span>
                  )}
                </span>
              </button>
            </li>
          ))}
        </ul>
      </nav>
      {/* The facts are one node's: the cluster view is about every node. */}
      {view !== 'cluster' && (current?.card && nodeKind(current.card) === 'localai-worker' ? <WorkerFacts card={current.card} /> : current?.info && <NodeFacts info={current.info} />)}
    </aside>
  );
}

/** What this node is: its capability, its backends directory, Hangar's version. */
function NodeFacts({ info: current }: { info: NodeInfo }) {
  return (
    <dl className="node-facts">
      <div>
        <dt>Capability</dt>
        {/* A blank capability is LocalAI's forced "": it names no build, so the CPU builds are used. */}
        <dd>{current.capability.trim() === '' ? `${JSON.stringify(current.capability)} (CPU builds)` : current.capability}</dd>
      </div>
      <div>
        <dt>Backends</dt>
        <dd className="mono" title={current.backendsDir}>{current.backendsDir}</dd>
      </div>
      <div>
        <dt>Version</dt>
        <dd>{current.version}</dd>
      </div>
    </dl>
  );
}

/** What LocalAI's frontend says of a worker. */
function WorkerFacts({ card }: { card: NodeCard }) {
  const worker = card.localai!;
  return (
    <dl className="node-facts" data-testid="worker-facts">
      <div>
        <dt>LocalAI worker</dt>
        <dd title={worker.frontend}>{worker.status} · {worker.frontend}</dd>
      </div>
      <div>
        <dt>Capability</dt>
        <dd>{card.capability}</dd>
      </div>
      <div>
        <dt>GPU</dt>
        <dd>{gpuText(card) ?? 'none reported'}</dd>
      </div>
      <div>
        <dt>Address</dt>
        <dd className="mono" title={worker.address}>{worker.address}</dd>
      </div>
    </dl>
  );
}

function gpuText(card: NodeCard): string | null {
  const worker = card.localai;
  if (!worker?.gpuVendor && !worker?.totalVramBytes) return null;
  return [worker.gpuVendor, worker.totalVramBytes ? `${iecBytes(worker.totalVramBytes)} VRAM` : null].filter(Boolean).join(', ');
}

/**
 * A node's stale processes and upgradable backends, counted from the same events that update the rows: the node on
 * screen from its rows, another node from its list as the Cluster view keeps it (its last heartbeat's counts only
 * until that list was first read).
 */
function useTally(node: NodeEntry, onScreen: boolean): NodeTally | null {
  const fromRows = (pick: (t: NodeTally) => number) => (s: BackendsState) =>
    onScreen && s.loaded ? pick(tallyOf(Object.values(s.byName), Object.values(s.processes))) : -1;
  const fromList = (pick: (t: NodeTally) => number) => (s: ClusterState) => {
    const backends = s.byNode[node.id]?.backends;
    return backends ? pick(tallyOfViews(backends)) : -1;
  };
  const rows = { stale: useBackends(fromRows((t) => t.stale)), upgradable: useBackends(fromRows((t) => t.upgradable)) };
  const listed = { stale: useCluster(fromList((t) => t.stale)), upgradable: useCluster(fromList((t) => t.upgradable)) };
  if (rows.stale >= 0) return rows;
  if (listed.stale >= 0) return listed;
  return node.card ? { stale: node.card.counts.stale, upgradable: node.card.counts.upgradable } : null;
}

/** A node in the sidebar: its status dot, name, what it runs on (or why it is offline), and red counts. */
function NodeItem(props: { node: NodeEntry; selected: boolean; onScreen: boolean; twin: boolean; pairedWorker: string | null }) {
  const { node, selected, onScreen, twin, pairedWorker } = props;
  const card = node.card;
  const tally = useTally(node, onScreen);
  const offline = card !== null && !card.self && awayText(card) !== null;
  const worker = nodeKind(card) === 'localai-worker';
  const sub = offline
    ? worker || card.status === 'unknown'
      ? awayText(card)!
      : `offline: ${card.reason ?? 'no heartbeat'}`
    : worker
      ? [gpuText(card!), card!.capability === card!.localai?.gpuVendor ? null : card!.capability].filter(Boolean).join(' · ')
      : node.info
        ? nodeSummary(node.label, node.info)
        : card
          ? `${card.platform}/${card.arch}`
          : 'connecting…';
  return (
    <button
      type="button"
      className={`nav-item${offline ? ' offline' : ''}`}
      aria-current={selected ? 'true' : undefined}
      onClick={() => {
        selectNode(node.id);
        if (uiStore.getState().view === 'cluster') showView('backends');
      }}
      data-testid={`node-${node.label}`}
    >
      <ConnectionDot offline={offline} unknown={offline && card.status === 'unknown'} />
      <span className="nav-label">
        <span className="nav-name" title={node.label}>
          {node.label}
          {twin && card && <span className="nav-id"> {card.id}</span>}
        </span>
        {worker && (
          <span className="pill kind-worker" data-testid="node-kind">
            LocalAI worker
          </span>
        )}
        <span className="nav-sub" title={sub}>
          {sub}
        </span>
        {pairedWorker && (
          <span className="nav-sub" data-testid="node-paired">
            also LocalAI worker {pairedWorker}
          </span>
        )}
        <LinkWord />
      </span>
      <span className="nav-side">
        {tally && tally.stale > 0 && (
          <span className="nav-count danger" title="stale processes" data-testid="node-stale">
            {tally.stale} stale
          </span>
        )}
        {tally && tally.upgradable > 0 && (
          <span className="nav-count danger" title="upgradable backends" data-testid="node-upgradable">
            {tally.upgradable} ↑
          </span>
        )}
      </span>
    </button>
  );
}
