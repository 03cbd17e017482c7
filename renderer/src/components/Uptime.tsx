import { humanDuration } from '../format.ts';
import { useNow } from '../state/clock.ts';
import { useConnection } from '../state/connection.ts';

/** Ticks once a second on the shared clock (only this span re-renders); stands still while the agent is unreachable. */
export function Uptime({ since }: { since: string }) {
  const ticking = useNow();
  const lostAt = useConnection((s) => s.lostAt);
  const now = lostAt ?? ticking;
  const started = Date.parse(since);
  return (
    <span className="chip-field" title={`Started ${new Date(started).toLocaleString()}`}>
      up {Number.isNaN(started) ? '–' : humanDuration(now - started)}
    </span>
  );
}
