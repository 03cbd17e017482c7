import { useState } from 'react';
import type { ProcessView } from '../../../shared/types.ts';
import { respawn, restart, stop, unload } from '../state/actions.ts';
import { openLogs } from '../state/logs.ts';
import { isWorkerSelected, useNodes, useRefusal } from '../state/node.ts';
import { ActionButton } from './ActionButton.tsx';
import { attempt } from './attempt.ts';
import { ConfirmDialog, ImpactList } from './ConfirmDialog.tsx';
import { isEnded } from './ProcessState.tsx';

/**
 * Respawn (a live process) or Restart (an ended one), Unload, Stop, Logs: the same buttons wherever a process is
 * listed. Stopping a live process says first what it stops; removing an ended row stops nothing. On a LocalAI worker,
 * what needs Hangar on the machine stays in place, off, with the reason; so does what needs LocalAI while it is down.
 */
export function ProcessActions({ process }: { process: Pick<ProcessView, 'model' | 'state' | 'pid' | 'port' | 'backend' | 'loaded' | 'runBy' | 'localaiDown'> }) {
  const { model } = process;
  const ended = isEnded(process.state);
  // A LocalAI server's model: respawned and unloaded through its API, its logs its own.
  const byLocalAi = process.runBy === 'localai';
  const localaiDown = byLocalAi && process.localaiDown ? `${process.localaiDown}: start LocalAI first (Settings → LocalAI)` : null;
  // A start may take minutes: its Stop cancels it rather than waiting for it.
  const starting = !byLocalAi && (process.state === 'starting' || process.state === 'loading');
  const [confirmingStop, setConfirmingStop] = useState(false);
  const onWorker = useNodes(isWorkerSelected);
  const noRespawn = useRefusal(ended ? 'restart' : 'respawn') ?? localaiDown;
  const noLogs = useRefusal('logs') ?? (byLocalAi ? 'LocalAI keeps the logs of the models it runs' : null);
  const doStop = () => void attempt(`Stop ${model}`, () => stop(model));
  const unloadable = byLocalAi ? localaiDown : process.state !== 'ready' ? 'Only a ready process can unload its model' : process.loaded ? null : 'No model is loaded in it';
  return (
    <>
      {ended ? (
        <ActionButton className="btn small" unavailable={noRespawn} data-testid="process-restart" onAct={() => void attempt(`Restart ${model}`, () => restart(model))}>
          Restart
        </ActionButton>
      ) : (
        <ActionButton className="btn small" unavailable={noRespawn} data-testid="process-respawn" onAct={() => void attempt(`Respawn ${model}`, () => respawn(model))}>
          Respawn
        </ActionButton>
      )}
      {!ended && (
        <ActionButton className="btn small" unavailable={unloadable} data-testid="process-unload" onAct={() => void attempt(`Unload ${model}`, () => unload(model))}>
          Unload
        </ActionButton>
      )}
      <ActionButton className="btn small" unavailable={localaiDown} data-testid="process-stop" onAct={() => (ended ? doStop() : setConfirmingStop(true))}>
        {ended ? 'Remove' : starting ? 'Cancel start' : 'Stop'}
      </ActionButton>
      <ActionButton className="btn small" unavailable={noLogs} data-testid="process-logs" onAct={() => void openLogs(model)}>
        Logs
      </ActionButton>
      {confirmingStop && (
        <ConfirmDialog open title={starting ? `Cancel the start of ${model}?` : `Stop ${model}?`} confirmLabel={starting ? 'Cancel start' : 'Stop'} onConfirm={doStop} onClose={() => setConfirmingStop(false)}>
          <ImpactList
            lines={
              onWorker
                ? [`Sends model.stop: the LocalAI worker frees ${model} and stops its process, no other.`, `LocalAI's frontend starts it again on its next request.`]
                : byLocalAi
                ? [`Asks LocalAI to stop ${model} (its /backend/shutdown): its process ends.`, `LocalAI loads it again on its next request.`]
                : starting
                ? [`Ends process PID ${process.pid} of ${process.backend} while it is ${process.state}: the load waiting for it fails.`, `Loading ${model} again starts a new process.`]
                : [`Will stop 1 process (${model}, PID ${process.pid} on port ${process.port}) of ${process.backend}.`, `Loading ${model} again starts a new process.`]
            }
          />
        </ConfirmDialog>
      )}
    </>
  );
}
