import { useState } from 'react';
import { NEEDS_HANGAR_AGENT, refusalOf } from '../../../shared/localai-worker.ts';
import type { GpuView, LocalAiWorkerView, NodeCard, NodeResources, ProcessView } from '../../../shared/types.ts';
import { bytesOf, humanBytes } from '../format.ts';
import { drainNode, setCordoned } from '../state/cluster.ts';
import { unknownSince, useLostSince } from '../state/connection.ts';
import { awayText, useNodes, type NodeEntry } from '../state/node.ts';
import { bridge } from '../state/session.ts';
import { ActionButton } from './ActionButton.tsx';
import { ConfirmDialog } from './ConfirmDialog.tsx';
import { useAction } from './useAction.ts';
import { Alert } from './Message.tsx';

/**
 * One node of the cluster at a glance: status, labels, what it runs, its machine as bars, cordon and drain. A LocalAI
 * worker's card says what it is, shows the GPU memory LocalAI reports, and says why the actions it lacks are off.
 * `pairedWorker`: the LocalAI worker that shares this Hangar node's machine and backends directory.
 */
export function ClusterNodeCard({ node, pairedWorker }: { node: NodeEntry; pairedWorker: string | null }) {
  const lostAt = useLostSince(useNodes((s) => s.cardsReadAt));
  const lost = lostAt !== null;
  const card = node.card;
  if (!card) return null;
  const away = card.self ? null : awayText(card);
  return (
    <article className={`node-card${away ? ' away' : ''}`} aria-label={`Node ${node.label}`} data-testid={`node-card-${node.label}`}>
      <header className="node-card-head">
        <span className={`dot ${lost ? 'warn' : away ? 'off' : 'ok'}`} role="img" aria-label={lost ? 'unknown' : card.status} data-testid="node-card-dot" />
        <h2 title={card.self ? `${node.label} (this host)` : node.label}>{node.label}</h2>
        {card.cordoned && <span className="badge warn" data-testid="cordoned">cordoned</span>}
        {card.viewerOnly ? (
          <span className="pill" data-testid="node-kind" title="This host joined the cluster as a viewer only: no rollout, pin or --on all touches it">
            viewer only
          </span>
        ) : (
          <NodeActions node={node} card={card} away={away} />
        )}
      </header>
      <div className="node-card-sub small">
        {card.localai && <span className="pill kind-worker" data-testid="node-kind">LocalAI worker</span>}
        <span className={away ? undefined : 'muted'} data-testid="node-card-status">
          {away ?? (card.localai ? `${card.localai.address} · ${card.capability}` : `${card.self ? 'this host · ' : ''}${card.platform}/${card.arch} · ${card.capability}`)}
        </span>
        {pairedWorker && (
          <span className="muted" data-testid="node-card-paired">
            also LocalAI worker {pairedWorker}
          </span>
        )}
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
      {card.resources ? (
        <Resources resources={card.resources} unknownSince={lost ? unknownSince(lostAt) : null} />
      ) : card.localai ? (
        <WorkerVram worker={card.localai} />
      ) : (
        <p className="muted small">No resources reported.</p>
      )}
      {card.localai && <WorkerOff />}
    </article>
  );
}

/** What a LocalAI worker's card cannot do, and why, in words rather than only in the buttons' tooltips. */
function WorkerOff() {
  return (
    <ul className="worker-off muted small" aria-label="Off for a LocalAI worker" data-testid="node-card-off">
      <li>Cordon and drain: in LocalAI's admin pages.</li>
      <li>Rollback, respawn, logs and stale-cwd detection: {NEEDS_HANGAR_AGENT}.</li>
    </ul>
  );
}

/**
 * "1 backend, 2 processes, 0 stale, 0 drift" in two columns, the troubling ones coloured and bold. A LocalAI worker's
 * stale count is unknown (its protocol reports no working directories), never a reassuring 0.
 */
function Counts({ card }: { card: NodeCard }) {
  const { backends, processes, stale, drift } = card.counts;
  const staleUnknown = card.localai ? `Stale-cwd detection needs Hangar on the worker's machine: ${NEEDS_HANGAR_AGENT}` : null;
  const items: Array<[string, number | string, string | undefined, string | undefined]> = [
    [backends === 1 ? 'backend' : 'backends', backends, undefined, undefined],
    [processes === 1 ? 'process' : 'processes', processes, undefined, undefined],
    ['stale', staleUnknown ? '?' : stale, stale > 0 ? 'danger' : undefined, staleUnknown ?? undefined],
    ['drift', drift, drift > 0 ? 'warn' : undefined, undefined],
  ];
  return (
    <dl className="node-counts small" data-testid="node-counts">
      {items.map(([term, count, tone, why]) => (
        <div key={term} className={tone} title={why}>
          <dt>{term}</dt>
          <dd>{count}</dd>
        </div>
      ))}
    </dl>
  );
}

/** `unknownSince`: the link to the agent was lost since the card was read, and when: the bars are no word on now. */
function Resources({ resources: r, unknownSince }: { resources: NodeResources; unknownSince: string | null }) {
  return (
    <div className={`bars${unknownSince ? ' bars-unknown' : ''}`} data-testid="node-resources" title={unknownSince ? `Use ${unknownSince}` : undefined}>
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

/** A LocalAI worker's GPU memory, as its frontend reports it (LocalAI reports no CPU or disk of a worker). */
function WorkerVram({ worker }: { worker: LocalAiWorkerView }) {
  if (worker.totalVramBytes === 0) return <p className="muted small">LocalAI reports no GPU memory for it.</p>;
  const used = worker.totalVramBytes - worker.availableVramBytes;
  const full = `${worker.gpuVendor ?? 'GPU'}: ${humanBytes(worker.availableVramBytes)} free of ${humanBytes(worker.totalVramBytes)}, as LocalAI reports it`;
  return (
    <div className="bars" data-testid="node-resources">
      <Bar label="VRAM" used={used} total={worker.totalVramBytes} text={bytesOf(used, worker.totalVramBytes)} full={full} />
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

function NodeActions({ node, card, away }: { node: NodeEntry; card: NodeCard; away: string | null }) {
  // A LocalAI worker is cordoned and drained in LocalAI, never by Hangar.
  const refused = refusalOf(card, 'drain');
  const cordon = useAction(setCordoned);
  const drain = useAction(drainNode);
  const [draining, setDraining] = useState<ProcessView[] | null>(null);
  const listFirst = useAction(async () => setDraining(await bridge().processes({ node: node.id })));
  const unavailable = refused ?? (away && `${node.label} is ${away}`) ?? (cordon.pending || drain.pending || listFirst.pending ? 'Under way…' : null);
  const error = cordon.error ?? drain.error ?? listFirst.error;
  return (
    <div className="node-card-actions">
      <ActionButton className="btn small ghost" unavailable={unavailable} onAct={() => void cordon.run(node.id, !card.cordoned)} data-testid="cordon">
        {card.cordoned ? 'Uncordon' : 'Cordon'}
      </ActionButton>
      <ActionButton className="btn small ghost" unavailable={unavailable} onAct={() => void listFirst.run()} data-testid="drain">
        {drain.pending ? 'Draining…' : 'Drain'}
      </ActionButton>
      {error && (
        <Alert inline>
          {error}
        </Alert>
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
