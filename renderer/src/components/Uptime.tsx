import { humanDuration } from '../format.ts';
import { useNow } from '../state/clock.ts';

/** Ticks once a second on the shared clock; only this span re-renders. */
export function Uptime({ since, bare = false }: { since: string; bare?: boolean }) {
  const now = useNow();
  const started = Date.parse(since);
  const text = Number.isNaN(started) ? '–' : humanDuration(now - started);
  return (
    <span className={bare ? undefined : 'chip-field'} title={`Started ${new Date(started).toLocaleString()}`}>
      {bare ? text : `up ${text}`}
    </span>
  );
}
