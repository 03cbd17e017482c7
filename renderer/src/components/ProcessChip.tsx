import { memo, useState } from 'react';
import { respawn, stop } from '../state/actions.ts';
import { useBackends } from '../state/backends.ts';
import { openLogs } from '../state/logs.ts';
import { toast } from '../state/toasts.ts';
import { errorMessage } from '../state/session.ts';
import { ActionButton } from './ActionButton.tsx';
import { ConfirmDialog, ImpactList } from './ConfirmDialog.tsx';
import { StaleBadge } from './StaleBadge.tsx';
import { Uptime } from './Uptime.tsx';

async function attempt(what: string, action: () => Promise<unknown>) {
  try {
    await action();
  } catch (error) {
    toast('error', `${what}: ${errorMessage(error)}`);
  }
}

/** One running model: subscribes to that process only, so its events re-render this chip and nothing else. */
export const ProcessChip = memo(function ProcessChip({ model }: { model: string }) {
  const process = useBackends((s) => s.processes[model]);
  const [confirmingStop, setConfirmingStop] = useState(false);
  if (!process) return null;
  const stale = process.cwd === 'stale';
  return (
    <li
      className={`chip${stale ? ' chip-stale' : ''}`}
      data-testid={`process-${model}`}
      data-pid={process.pid}
      data-state={process.state}
      data-cwd={process.cwd}
    >
      <span className="chip-model">{model}</span>
      <span className="chip-field">
        PID <b data-testid="process-pid">{process.pid}</b>
      </span>
      <span className="chip-field">
        port <b>{process.port}</b>
      </span>
      <Uptime since={process.startedAt} />
      {process.state !== 'ready' && <span className={`state state-${process.state}`}>{process.state}</span>}
      {stale && <StaleBadge process={process} />}
      <span className="chip-actions">
        <ActionButton className="btn small" onAct={() => void attempt(`Respawn ${model}`, () => respawn(model))}>
          Respawn
        </ActionButton>
        <ActionButton className="btn small" onAct={() => setConfirmingStop(true)}>
          Stop
        </ActionButton>
        <ActionButton className="btn small" onAct={() => void openLogs(model)}>
          Logs
        </ActionButton>
      </span>
      {confirmingStop && (
        <ConfirmDialog
          open
          title={`Stop ${model}?`}
          confirmLabel="Stop"
          onConfirm={() => void attempt(`Stop ${model}`, () => stop(model))}
          onClose={() => setConfirmingStop(false)}
        >
          <ImpactList
            lines={[
              `Will stop 1 process (${model}, PID ${process.pid} on port ${process.port}) of ${process.backend}.`,
              `Loading ${model} again starts a new process.`,
            ]}
          />
        </ConfirmDialog>
      )}
    </li>
  );
});
