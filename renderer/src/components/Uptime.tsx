import { humanDuration } from '../format.ts';
import { useNow } from '../state/clock.ts';
import { useConnection } from '../state/connection.ts';

/** Ticks once a second on the shared clock (only this span re-renders); stands still while the agent is unreachable. */
export function Uptime({ since, bare = false }: { since: string; bare?: boolean }) {
  const ticking = useNow();
  const lostAt = useConnection((s) => s.lostAt);
  const now = lostAt ?? ticking;
  const started = Date.parse(since);
  const text = Number.isNaN(started) ? '–' : humanDuration(now - started);
  return (
    <span className={bare ? undefined : 'chip-field'} title={`Started ${new Date(started).toLocaleString()}`}>
      {bare ? text : `up ${text}`}
    </span>
  );
}
