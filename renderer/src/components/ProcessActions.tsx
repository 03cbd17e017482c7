import type { ProcessView } from '../../../shared/types.ts';
import { respawn, restart, stop } from '../state/actions.ts';
import { openLogs } from '../state/logs.ts';
import { attempt } from './attempt.ts';
import { isEnded } from './ProcessState.tsx';

/** Respawn (a live process) or Restart (an ended one), Stop, Logs: the same buttons wherever a process is listed. */
export function ProcessActions({ process }: { process: Pick<ProcessView, 'model' | 'state'> }) {
  const { model } = process;
  const ended = isEnded(process.state);
  return (
    <>
      {ended ? (
        <button type="button" className="btn small" data-testid="process-restart" onClick={() => void attempt(`Restart ${model}`, () => restart(model))}>
          Restart
        </button>
      ) : (
        <button type="button" className="btn small" data-testid="process-respawn" onClick={() => void attempt(`Respawn ${model}`, () => respawn(model))}>
          Respawn
        </button>
      )}
      <button type="button" className="btn small" data-testid="process-stop" onClick={() => void attempt(`Stop ${model}`, () => stop(model))}>
        {ended ? 'Remove' : 'Stop'}
      </button>
      <button type="button" className="btn small" data-testid="process-logs" onClick={() => void openLogs(model)}>
        Logs
      </button>
    </>
  );
}
