import { useEffect } from 'react';
import type { ProcessView } from '../../../shared/types.ts';
import { humanBytes } from '../format.ts';
import { refreshProcesses } from '../state/actions.ts';
import { useBackends } from '../state/backends.ts';
import { unknownSince, useLostSince } from '../state/connection.ts';
import { isWorkerSelected, useNodes } from '../state/node.ts';
import { showView } from '../state/ui.ts';
import { isStale } from '../state/node-backends.ts';
import { useProcessVram } from '../state/vram.ts';
import { ProcessActions } from './ProcessActions.tsx';
import { exitNote, reportedNumber, shownState, startingNote } from '../../../shared/process-text.ts';
import { useStore } from 'zustand';
import { clockStore } from '../state/clock.ts';
import { clockTime } from '../format.ts';
import { ProcessStateBadge, UnknownStateBadge, isEnded } from './ProcessState.tsx';
import { StaleBadge } from './StaleBadge.tsx';
import { Uptime } from './Uptime.tsx';

/** CPU and memory change without events: re-read while the table is on screen. */
const USAGE_REFRESH_MS = 3000;

/** Ended and stale rows first, then by model. */
const byUrgency = (a: ProcessView, b: ProcessView) => urgency(b) - urgency(a) || a.model.localeCompare(b.model);
const urgency = (p: ProcessView) => (isEnded(p.state) || isStale(p) ? 2 : shownState(p) === 'ready' ? 0 : 1);

/** The processes Hangar supervises, as PM2's list shows them: state, restarts, uptime, CPU, memory, actions. */
export function SupervisedProcesses() {
  const processes = useBackends((s) => s.processes);
  useEffect(() => {
    const timer = setInterval(() => void refreshProcesses().catch(() => undefined), USAGE_REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  const onWorker = useNodes(isWorkerSelected);
  // A LocalAI worker has no Hangar to read its GPU tools.
  const vram = useProcessVram(onWorker ? null : USAGE_REFRESH_MS);
  const all = Object.values(processes).sort(byUrgency);
  const lostAt = useLostSince(useBackends((s) => s.readAt));
  // A LocalAI worker runs its own processes and reports each model's address, not its pid, age or use.
  const groups = onWorker
    ? [{ title: 'Running on the LocalAI worker', label: 'Processes on the LocalAI worker', rows: all, testId: 'supervised-table' }]
    : [
        { title: 'Supervised by Hangar', label: 'Processes supervised by Hangar', rows: all.filter((p) => p.runBy !== 'localai'), testId: 'supervised-table' },
        { title: 'Run by LocalAI', label: 'Models the LocalAI server runs', rows: all.filter((p) => p.runBy === 'localai'), testId: 'localai-table' },
      ];
  return (
    <>
      {lostAt !== null && all.length > 0 && (
        <p className="alert muted" role="status" data-testid="processes-unknown">
          Their states, pids and use are {unknownSince(lostAt)}; the last ones read are greyed out until it is back.
        </p>
      )}
      {groups.map((group) => group.rows.length > 0 && <ProcessTable key={group.testId} {...group} onWorker={onWorker} vram={vram} lost={lostAt !== null} />)}
    </>
  );
}

interface TableProps {
  title: string;
  label: string;
  rows: ProcessView[];
  testId: string;
  onWorker: boolean;
  vram: Map<string, number> | null;
  /** The link to the agent was lost since the rows were read: none of them is a state now. */
  lost: boolean;
}

function ProcessTable({ title, label, rows, testId, onWorker, vram, lost }: TableProps) {
  const localaiDown = rows.find((p) => p.runBy === 'localai' && p.localaiDown)?.localaiDown;
  return (
    <>
      <h2 className="section-title">{title}</h2>
      {localaiDown && (
        <p className="muted" data-testid="localai-down">
          {localaiDown}: nothing can be done to its models until it runs again.{' '}
          <button type="button" className="btn small" onClick={() => showView('settings')} data-testid="localai-down-settings">
            Open Settings → LocalAI
          </button>
        </p>
      )}
      <div className="table-wrap fit">
        <table className="table" aria-label={label} data-testid={testId}>
          <thead>
            <tr>
              <th scope="col" className="sticky-start">Model</th>
              <th scope="col" className="state-col">State</th>
              {onWorker ? (
                <th scope="col" className="num">Port</th>
              ) : (
                <>
                  <th scope="col">Backend</th>
                  <th scope="col" className="num">PID</th>
                  <th scope="col" className="num">Port</th>
                </>
              )}
              {!onWorker && (
                <>
                  <th scope="col" className="num" title="Restarts">↺</th>
                  <th scope="col" className="num">Uptime</th>
                  <th scope="col" className="num">CPU</th>
                  <th scope="col" className="num">Memory</th>
                  {vram && <th scope="col" className="num">VRAM</th>}
                </>
              )}
              <th scope="col" className="sticky-end"><span className="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {rows.map((p) => (
              <SupervisedRow key={p.model} process={p} vram={vram && (vram.get(p.model) ?? 0)} onWorker={onWorker} lost={lost} />
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/**
 * `vram`: the GPU memory its tree holds, or null where no tool reports it per process. On a LocalAI worker only what
 * its protocol reports: the model, where it listens, that it runs.
 */
function SupervisedRow({ process: p, vram, onWorker, lost }: { process: ProcessView; vram: number | null; onWorker: boolean; lost: boolean }) {
  const ended = isEnded(p.state);
  const starting = useStartingNote(p);
  const note = p.error ?? (ended && p.exit ? exitNote(p.exit, clockTime) : (starting ?? p.message));
  return (
    <tr className={ended || isStale(p) || lost ? 'row-ended' : undefined} data-testid={`supervised-${p.model}`} data-state={lost ? 'unknown' : shownState(p)}>
      <td className="sticky-start">
        <b>{p.model}</b>
        {note && (
          <span className={`process-note${p.error || ended ? ' error' : ''}`} data-testid="supervised-note">
            {note}
          </span>
        )}
      </td>
      <td className="nowrap">
        {lost ? (
          <UnknownStateBadge />
        ) : isStale(p) ? (
          <StaleBadge process={{ ...p, dir: p.dir }} />
        ) : (
          <ProcessStateBadge process={p} />
        )}
      </td>
      {!onWorker && <td>{p.backend}</td>}
      {!onWorker && <ReportedCell value={p.pid} testId="supervised-pid" />}
      <ReportedCell value={p.port} testId="supervised-port" />
      {!onWorker && (
        <>
          <td className="num" data-testid="supervised-restarts">{p.restarts}</td>
          <td className="num nowrap">{ended ? <span className="muted">—</span> : <Uptime since={p.startedAt} bare />}</td>
          <td className="num">{ended || p.cpu === null ? <span className="muted">—</span> : `${p.cpu.toFixed(1)}%`}</td>
          <td className="num nowrap">{ended || p.rss === null ? <span className="muted">—</span> : humanBytes(p.rss)}</td>
          {vram !== null && <td className="num nowrap" data-testid="supervised-vram">{ended || vram === 0 ? <span className="muted">—</span> : humanBytes(vram)}</td>}
        </>
      )}
      <td className="sticky-end">
        <span className="row-actions">
          <ProcessActions process={p} />
        </span>
      </td>
    </tr>
  );
}

/** A starting row's note on the shared clock; other rows do not re-render on its ticks. */
function useStartingNote(p: ProcessView): string | null {
  const waiting = Boolean(p.deadline) && (p.state === 'starting' || p.state === 'loading');
  const now = useStore(clockStore, (s) => (waiting ? s.now : 0));
  return waiting ? startingNote(p, now, clockTime) : null;
}

/** A pid or port; 0 is none (a LocalAI model once LocalAI is gone), shown as the CLI shows it: not as a number. */
function ReportedCell({ value, testId }: { value: number; testId: string }) {
  return (
    <td className="num mono" data-testid={testId}>
      {reportedNumber(value) ?? <span className="muted">—</span>}
    </td>
  );
}
