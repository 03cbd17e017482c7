import { humanDuration } from '../format.ts';
import { useNow } from '../state/clock.ts';

/** Ticks once a second on the shared clock; only this span re-renders. */
export function Uptime({ since }: { since: string }) {
  const now = useNow();
  const started = Date.parse(since);
  return (
    <span className="chip-field" title={`Started ${new Date(started).toLocaleString()}`}>
      up {Number.isNaN(started) ? '–' : humanDuration(now - started)}
    </span>
  );
}
