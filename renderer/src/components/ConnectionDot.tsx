import type { ConnectionStatus } from '../bridge/transport.ts';
import { useConnection } from '../state/connection.ts';

/** The word beside a node while the link to the agent is not open. */
const LINK_WORDS: Record<Exclude<ConnectionStatus, 'open'>, string> = {
  connecting: 'connecting',
  reconnecting: 'unreachable',
  unresponsive: 'not answering',
  unauthorized: 'signed out',
};

/**
 * A node's state as this viewer sees it: the link to the agent first (amber while it is down), then the node's own
 * presence in the cluster. Colour is never the only sign: the dot has a name, and LinkWord says the link's state.
 */
export function ConnectionDot({ offline = false, unknown = false }: { offline?: boolean; unknown?: boolean }) {
  const status = useConnection((s) => s.status);
  const [tone, label] = status !== 'open' ? ['warn', `agent ${LINK_WORDS[status]}`] : unknown ? ['off', 'unknown'] : offline ? ['off', 'offline'] : ['ok', 'online'];
  return <span className={`dot ${tone}`} role="img" aria-label={label} data-testid="node-connection" data-status={status} />;
}

/** "unreachable", "not answering"…: why the node's state is not known now; nothing while the link is open. */
export function LinkWord() {
  const status = useConnection((s) => s.status);
  if (status === 'open') return null;
  return (
    <span className="link-word" data-testid="node-link" data-status={status}>
      {LINK_WORDS[status]}
    </span>
  );
}
