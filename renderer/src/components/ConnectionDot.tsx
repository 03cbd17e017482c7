import { useConnection } from '../state/connection.ts';

/** The node's link state: a dot and, when it is not connected, a word, so colour is never the only sign. */
export function ConnectionDot() {
  const status = useConnection((s) => s.status);
  const online = status === 'open';
  const label = online ? 'connected' : status === 'reconnecting' ? 'unreachable' : 'connecting';
  return (
    <span className="conn" data-testid="node-connection" data-status={status}>
      <span className={`dot ${online ? 'ok' : 'warn'}`} aria-hidden="true" />
      {online ? <span className="sr-only">{label}</span> : <span className="conn-label">{label}</span>}
    </span>
  );
}
