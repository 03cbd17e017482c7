import type { NodeInfo } from '../../../shared/types.ts';
import { useBackends } from '../state/backends.ts';
import { selectNode, useNodes, type NodeEntry } from '../state/node.ts';
import { ConnectionDot } from './ConnectionDot.tsx';
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
  const stale = useBackends((s) => Object.values(s.processes).filter((p) => p.state === 'stale').length);
  const crashed = useBackends((s) => Object.values(s.processes).filter((p) => p.state === 'crashed' || p.state === 'crash-looping').length);
  const current = nodes.find((n) => n.id === selected)?.info;
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
          {nodes.map((node) => (
            <li key={node.id}>
              <NodeItem node={node} selected={view !== 'cluster' && node.id === selected} twin={nodes.some((o) => o !== node && o.label === node.label)} />
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
              </button>
            </li>
          ))}
        </ul>
      </nav>
      {current && (
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
      )}
    </aside>
  );
}

/** A node in the sidebar: its status dot, name, what it runs on (or why it is offline), and red counts. */
function NodeItem({ node, selected, twin }: { node: NodeEntry; selected: boolean; twin: boolean }) {
  const card = node.card;
  const offline = card !== null && card.status === 'offline';
  const sub = offline
    ? `offline: ${card.reason ?? 'no heartbeat'}`
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
      <ConnectionDot offline={offline} />
      <span className="nav-label">
        {node.label}
        {twin && card && <span className="nav-id"> {card.id}</span>}
        <span className="nav-sub">{sub}</span>
      </span>
      {card && card.counts.stale > 0 && <span className="nav-count danger" title="stale processes">{card.counts.stale} stale</span>}
      {card && card.counts.upgradable > 0 && <span className="nav-count danger" title="upgradable backends">{card.counts.upgradable} ↑</span>}
    </button>
  );
}
