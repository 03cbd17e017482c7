import { useState } from 'react';
import type { ProcessView } from '../../../shared/types.ts';
import { respawn, restart, stop } from '../state/actions.ts';
import { openLogs } from '../state/logs.ts';
import { ActionButton } from './ActionButton.tsx';
import { attempt } from './attempt.ts';
import { ConfirmDialog, ImpactList } from './ConfirmDialog.tsx';
import { isEnded } from './ProcessState.tsx';

/**
 * Respawn (a live process) or Restart (an ended one), Stop, Logs: the same buttons wherever a process is listed.
 * Stopping a live process says first what it stops; removing an ended row stops nothing.
 */
export function ProcessActions({ process }: { process: Pick<ProcessView, 'model' | 'state' | 'pid' | 'port' | 'backend'> }) {
  const { model } = process;
  const ended = isEnded(process.state);
  const [confirmingStop, setConfirmingStop] = useState(false);
  const doStop = () => void attempt(`Stop ${model}`, () => stop(model));
  return (
    <>
      {ended ? (
        <ActionButton className="btn small" data-testid="process-restart" onAct={() => void attempt(`Restart ${model}`, () => restart(model))}>
          Restart
        </ActionButton>
      ) : (
        <ActionButton className="btn small" data-testid="process-respawn" onAct={() => void attempt(`Respawn ${model}`, () => respawn(model))}>
          Respawn
        </ActionButton>
      )}
      <ActionButton className="btn small" data-testid="process-stop" onAct={() => (ended ? doStop() : setConfirmingStop(true))}>
        {ended ? 'Remove' : 'Stop'}
      </ActionButton>
      <ActionButton className="btn small" data-testid="process-logs" onAct={() => void openLogs(model)}>
        Logs
      </ActionButton>
      {confirmingStop && (
        <ConfirmDialog open title={`Stop ${model}?`} confirmLabel="Stop" onConfirm={doStop} onClose={() => setConfirmingStop(false)}>
          <ImpactList
            lines={[
              `Will stop 1 process (${model}, PID ${process.pid} on port ${process.port}) of ${process.backend}.`,
              `Loading ${model} again starts a new process.`,
            ]}
          />
        </ConfirmDialog>
      )}
    </>
  );
}
