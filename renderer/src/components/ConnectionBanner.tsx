import type { ConnectionStatus } from '../bridge/transport.ts';

const TEXT: Partial<Record<ConnectionStatus, string>> = {
  connecting: 'Connecting to the agent…',
  reconnecting: 'The agent cannot be reached. Actions are off and uptimes are paused until it is back; reconnecting…',
  unresponsive: 'The agent is not answering (stopped or overloaded). Actions are off and uptimes are paused until it answers again; waiting…',
};

export function ConnectionBanner({ status }: { status: ConnectionStatus }) {
  const text = TEXT[status];
  if (!text) return null;
  return (
    <div className="banner" role="status" data-testid="connection-banner">
      <span className="spinner" aria-hidden="true" /> {text}
    </div>
  );
}
