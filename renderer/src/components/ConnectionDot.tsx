import type { ConnectionStatus } from '../bridge/transport.ts';
import { useConnection } from '../state/connection.ts';

/** The word beside the amber dot while the link to the agent is not open. */
const LINK_WORDS: Record<Exclude<ConnectionStatus, 'open'>, string> = {
  connecting: 'connecting',
  reconnecting: 'unreachable',
  unresponsive: 'not answering',
  unauthorized: 'signed out',
};

/**
 * A node's state as this viewer sees it: the link to the agent first (amber and a word while it is down), then the
 * node's own presence in the cluster. Colour is never the only sign.
 */
export function ConnectionDot({ offline = false }: { offline?: boolean }) {
  const status = useConnection((s) => s.status);
  if (status !== 'open') {
    return (
      <span className="conn" data-testid="node-connection" data-status={status}>
        <span className="dot warn" aria-hidden="true" />
        <span className="conn-label">{LINK_WORDS[status]}</span>
      </span>
    );
  }
  return (
    <span className="conn" data-testid="node-connection" data-status={status}>
      <span className={`dot ${offline ? 'off' : 'ok'}`} role="img" aria-label={offline ? 'offline' : 'online'} />
    </span>
  );
}
