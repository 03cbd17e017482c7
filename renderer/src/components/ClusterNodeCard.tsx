import { useState } from 'react';
import type { GpuView, NodeCard, NodeResources, ProcessView } from '../../../shared/types.ts';
import { bytesOf, humanBytes } from '../format.ts';
import { drainNode, setCordoned } from '../state/cluster.ts';
import { awayText, type NodeEntry } from '../state/node.ts';
import { bridge } from '../state/session.ts';
import { ConfirmDialog } from './ConfirmDialog.tsx';
import { useAction } from './useAction.ts';

/** One node of the cluster at a glance: status, labels, what it runs, its machine as bars, cordon and drain. */
export function ClusterNodeCard({ node }: { node: NodeEntry }) {
  const card = node.card;
  if (!card) return null;
  const away = card.self ? null : awayText(card);
  return (
    <article className={`node-card${away ? ' away' : ''}`} aria-label={`Node ${node.label}`} data-testid={`node-card-${node.label}`}>
      <header className="node-card-head">
        <span className={`dot ${away ? 'off' : 'ok'}`} role="img" aria-label={card.status} />
        <h2 title={card.self ? `${node.label} (this host)` : node.label}>{node.label}</h2>
        {card.cordoned && <span className="badge warn" data-testid="cordoned">cordoned</span>}
        <span className="spacer" />
        <NodeActions node={node} card={card} disabled={away !== null} />
      </header>
      <div className="node-card-sub small">
        <span className={away ? undefined : 'muted'} data-testid="node-card-status">
          {away ?? `${card.self ? 'this host · ' : ''}${card.platform}/${card.arch} · ${card.capability}`}
        </span>
        {Object.keys(card.labels).length > 0 && (
          <ul className="labels" aria-label="Labels">
            {Object.entries(card.labels).map(([key, value]) => (
              <li key={key} className="tag">
                {key}={value}
              </li>
            ))}
          </ul>
        )}
      </div>
      <Counts card={card} />
      {card.resources ? <Resources resources={card.resources} /> : <p className="muted small">No resources reported.</p>}
    </article>
  );
}

/** "1 backend, 2 processes, 0 stale, 0 drift" in two columns, the troubling ones coloured and bold. */
function Counts({ card }: { card: NodeCard }) {
  const { backends, processes, stale, drift } = card.counts;
  const items: Array<[string, number, string | undefined]> = [
    [backends === 1 ? 'backend' : 'backends', backends, undefined],
    [processes === 1 ? 'process' : 'processes', processes, undefined],
    ['stale', stale, stale > 0 ? 'danger' : undefined],
    ['drift', drift, drift > 0 ? 'warn' : undefined],
  ];
  return (
    <dl className="node-counts small" data-testid="node-counts">
      {items.map(([term, count, tone]) => (
        <div key={term} className={tone}>
          <dt>{term}</dt>
          <dd>{count}</dd>
        </div>
      ))}
    </dl>
  );
}

function Resources({ resources: r }: { resources: NodeResources }) {
  return (
    <div className="bars" data-testid="node-resources">
      <Bar label="CPU" used={Math.min(r.cpu.load1, r.cpu.count)} total={r.cpu.count} text={`load ${r.cpu.load1.toFixed(2)} / ${r.cpu.count}`} full={`load ${r.cpu.load1.toFixed(2)} on ${r.cpu.count} cores`} />
      {r.memory && (
        <Bar
          label="RAM"
          used={r.memory.totalBytes - r.memory.availableBytes}
          total={r.memory.totalBytes}
          text={`${humanBytes(r.memory.availableBytes)} free`}
          full={`${humanBytes(r.memory.availableBytes)} free of ${humanBytes(r.memory.totalBytes)}`}
        />
      )}
      {r.disk && (
        <Bar label="Disk" used={r.disk.totalBytes - r.disk.freeBytes} total={r.disk.totalBytes} text={`${humanBytes(r.disk.freeBytes)} free`} full={`${humanBytes(r.disk.freeBytes)} free of ${humanBytes(r.disk.totalBytes)}`} />
      )}
      {r.gpus.map((gpu) => (
        <Gpu key={`${gpu.vendor}-${gpu.index}`} gpu={gpu} />
      ))}
      {r.gpus.length === 0 && (
        <p className="muted small" data-testid="gpu-none">
          {r.gpuProblem ?? (r.gpuTools.length === 0 ? 'no GPU tool found' : 'no GPU')}
        </p>
      )}
    </div>
  );
}

/** The model on a line of its own (it is the figure people look for), then its VRAM as a bar and how busy it is. */
function Gpu({ gpu }: { gpu: GpuView }) {
  const vram = gpu.vramTotalBytes === null ? 'VRAM unknown' : `${humanBytes(gpu.vramUsedBytes ?? 0)} of ${humanBytes(gpu.vramTotalBytes)}`;
  const busy = gpu.utilization === null ? '' : `, ${gpu.utilization}% busy`;
  const short = `${gpu.vramTotalBytes === null ? '?' : bytesOf(gpu.vramUsedBytes ?? 0, gpu.vramTotalBytes)}${gpu.utilization === null ? '' : ` · ${gpu.utilization}%`}`;
  return (
    <div className="gpu" data-testid="gpu">
      <span className="gpu-model small" title={gpu.model}>
        {gpu.model}
      </span>
      <Bar label="VRAM" used={gpu.vramUsedBytes ?? 0} total={gpu.vramTotalBytes ?? 0} text={short} full={`${gpu.model}: ${vram}${busy}`} />
    </div>
  );
}

/** A labelled meter: what it measures, how full, and the figures in words (colour is never the only sign). */
function Bar({ label, used, total, text, full }: { label: string; used: number; total: number; text: string; full: string }) {
  const share = total > 0 ? Math.max(0, Math.min(1, used / total)) : 0;
  return (
    <div className="bar">
      <span className="bar-label">{label}</span>
      <meter min={0} max={1} value={share} high={0.85} optimum={0.2} aria-label={`${label}: ${full}`} />
      <span className="bar-text small" title={full}>
        {text}
      </span>
    </div>
  );
}

function NodeActions({ node, card, disabled }: { node: NodeEntry; card: NodeCard; disabled: boolean }) {
  const cordon = useAction(setCordoned);
  const drain = useAction(drainNode);
  const [draining, setDraining] = useState<ProcessView[] | null>(null);
  const listFirst = useAction(async () => setDraining(await bridge().processes({ node: node.id })));
  const busy = cordon.pending || drain.pending || listFirst.pending;
  const error = cordon.error ?? drain.error ?? listFirst.error;
  return (
    <div className="node-card-actions">
      <button type="button" className="btn small ghost" disabled={disabled || busy} onClick={() => void cordon.run(node.id, !card.cordoned)} data-testid="cordon">
        {card.cordoned ? 'Uncordon' : 'Cordon'}
      </button>
      <button type="button" className="btn small ghost" disabled={disabled || busy} onClick={() => void listFirst.run()} data-testid="drain">
        {drain.pending ? 'Draining…' : 'Drain'}
      </button>
      {error && (
        <p className="alert error inline" role="alert">
          {error}
        </p>
      )}
      <ConfirmDialog
        open={draining !== null}
        title={`Drain ${node.label}?`}
        confirmLabel={draining?.length ? `Stop ${draining.length} process${draining.length === 1 ? '' : 'es'}` : 'Cordon'}
        onConfirm={() => void drain.run(node.id)}
        onClose={() => setDraining(null)}
      >
        <p>No rollout or convergence will touch {node.label} until it is uncordoned.</p>
        {draining && draining.length > 0 ? (
          <ul className="impact" data-testid="drain-list">
            {draining.map((p) => (
              <li key={p.model}>
                Stop {p.model} ({p.backend}, pid {p.pid}): its model is freed first
              </li>
            ))}
          </ul>
        ) : (
          <p className="muted">It runs no process.</p>
        )}
      </ConfirmDialog>
    </div>
  );
}
