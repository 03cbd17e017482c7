import { endedText, shownState, type ShownState } from '../../../shared/process-text.ts';
import type { ProcessState, ProcessView } from '../../../shared/types.ts';
import { clockTime } from '../format.ts';

/** States that need the user: red. */
const DANGER = new Set<ProcessState>(['stale', 'crashed', 'crash-looping']);
/** States on the way somewhere, or at rest with no model: neutral. */
const TRANSIENT = new Set<ShownState>(['starting', 'loading', 'stopping', 'idle']);

export function isEnded(state: ProcessState): boolean {
  return state === 'exited' || state === 'crashed' || state === 'crash-looping';
}

/** A process's state as a badge; the title says how an ended process ended, or what went wrong. */
export function ProcessStateBadge({ process }: { process: Pick<ProcessView, 'state' | 'loaded' | 'error' | 'exit'> }) {
  const state = shownState(process);
  const tone = DANGER.has(process.state) ? 'danger-soft' : TRANSIENT.has(state) ? 'neutral' : state === 'ready' ? 'ok' : 'warn';
  const exit = process.exit && isEnded(process.state) ? endedText(process.exit, clockTime) : null;
  return (
    <span className={`badge ${tone}`} data-testid="process-state" data-state={state} title={[process.error, exit].filter(Boolean).join('\n') || undefined}>
      {state}
    </span>
  );
}

/** In place of a state read before the link to the agent was lost: no word on the process now. */
export function UnknownStateBadge() {
  return (
    <span className="badge neutral" data-testid="process-state" data-state="unknown">
      unknown
    </span>
  );
}
