import { memo } from 'react';
import { useBackends } from '../state/backends.ts';
import { unknownSince, useLostSince } from '../state/connection.ts';
import { isStale } from '../state/node-backends.ts';
import { ProcessActions } from './ProcessActions.tsx';
import { endedText, reportedNumber, shownState } from '../../../shared/process-text.ts';
import { clockTime } from '../format.ts';
import { ProcessStateBadge, UnknownStateBadge, isEnded } from './ProcessState.tsx';
import { StaleBadge } from './StaleBadge.tsx';
import { Uptime } from './Uptime.tsx';

/** One running model: subscribes to that process only, so its events re-render this chip and nothing else. */
export const ProcessChip = memo(function ProcessChip({ model }: { model: string }) {
  const process = useBackends((s) => s.processes[model]);
  const lostAt = useLostSince(useBackends((s) => s.readAt));
  if (!process) return null;
  const stale = isStale(process);
  const ended = isEnded(process.state);
  return (
    <li
      className={`chip${lostAt !== null ? ' chip-unknown' : stale || ended ? ' chip-stale' : ''}`}
      data-testid={`process-${model}`}
      data-pid={process.pid}
      data-state={lostAt !== null ? 'unknown' : shownState(process)}
      data-cwd={process.cwd}
      title={lostAt !== null ? `Its state, pid and port are ${unknownSince(lostAt)}` : undefined}
    >
      <span className="chip-model">{model}</span>
      {reportedNumber(process.pid) !== null && (
        <span className="chip-field">
          PID <b data-testid="process-pid">{process.pid}</b>
        </span>
      )}
      {reportedNumber(process.port) !== null && (
        <span className="chip-field">
          port <b>{process.port}</b>
        </span>
      )}
      {!ended && process.startedAt && <Uptime since={process.startedAt} />}
      {process.restarts > 0 && (
        <span className="chip-field" title="Restarts">
          ↺ <b>{process.restarts}</b>
        </span>
      )}
      {lostAt !== null ? (
        <UnknownStateBadge />
      ) : (
        <>
          {shownState(process) !== 'ready' && process.state !== 'stale' && <ProcessStateBadge process={process} />}
          {stale && <StaleBadge process={process} />}
        </>
      )}
      {(process.error || (ended && process.exit)) && (
        <span className="process-note error" data-testid="process-error">
          {process.error ?? endedText(process.exit!, clockTime)}
        </span>
      )}
      <span className="chip-actions">
        <ProcessActions process={process} />
      </span>
    </li>
  );
});
