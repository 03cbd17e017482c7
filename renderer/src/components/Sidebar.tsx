import type { NodeInfo } from '../../../shared/types.ts';
import { useBackends } from '../state/backends.ts';
import { ConnectionDot } from './ConnectionDot.tsx';
import { useNodes } from '../state/node.ts';
import type { View } from '../state/ui.ts';
import { showView, useUi } from '../state/ui.ts';

const VIEWS: { id: View; label: string }[] = [
  { id: 'backends', label: 'Backends' },
  { id: 'gallery', label: 'Gallery' },
  { id: 'processes', label: 'Processes' },
];

function nodeSummary(label: string, info: NodeInfo): string {
  const platform = `${info.platform}/${info.arch}`;
  return info.name && info.name !== label ? `${info.name} · ${platform}` : platform;
}

export function Sidebar() {
  const nodes = useNodes((s) => s.nodes);
  const selected = useNodes((s) => s.selected);
  const view = useUi((s) => s.view);
  const installed = useBackends((s) => (s.loaded ? s.names.length : null));
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
          {nodes.map((node) => (
            <li key={node.id}>
              <button type="button" className="nav-item" aria-current={node.id === selected ? 'true' : undefined}>
                <ConnectionDot />
                <span className="nav-label">
                  {node.label}
                  <span className="nav-sub">
                    {node.info ? nodeSummary(node.label, node.info) : 'connecting…'}
                  </span>
                </span>
              </button>
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
              </button>
            </li>
          ))}
        </ul>
      </nav>
      {current && (
        <dl className="node-facts">
          <div>
            <dt>Capability</dt>
            <dd>{current.capability}</dd>
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
