import { endedText } from '../../../shared/process-text.ts';
import type { ProcessState, ProcessView } from '../../../shared/types.ts';

/** States that need the user: red. */
const DANGER = new Set<ProcessState>(['stale', 'crashed', 'crash-looping']);
/** States on the way somewhere: neutral. */
const TRANSIENT = new Set<ProcessState>(['starting', 'loading', 'stopping']);

export function isEnded(state: ProcessState): boolean {
  return state === 'exited' || state === 'crashed' || state === 'crash-looping';
}

/** A process's state as a badge; the title says how an ended process ended, or what went wrong. */
export function ProcessStateBadge({ process }: { process: Pick<ProcessView, 'state' | 'error' | 'exit'> }) {
  const { state } = process;
  const tone = DANGER.has(state) ? 'danger-soft' : TRANSIENT.has(state) ? 'neutral' : state === 'ready' ? 'ok' : 'warn';
  const exit = process.exit && isEnded(state) ? endedText(process.exit, clockTime) : null;
  return (
    <span className={`badge ${tone}`} data-testid="process-state" data-state={state} title={[process.error, exit].filter(Boolean).join('\n') || undefined}>
      {state}
    </span>
  );
}

/** A moment as this machine's clock shows it, e.g. "14:03:07". */
export function clockTime(iso: string): string {
  return new Date(iso).toLocaleTimeString([], { hour12: false });
}
