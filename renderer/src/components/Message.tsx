import type { ReactNode } from 'react';

interface MessageProps {
  kind: 'ok' | 'error' | 'muted';
  onDismiss: () => void;
  children: ReactNode;
  testId?: string;
  /** A box around it, for a message that stands on its own line. */
  boxed?: boolean;
}

/** A result or error beside what it is about; every one can be dismissed. */
export function Message({ kind, onDismiss, children, testId, boxed = false }: MessageProps) {
  return (
    <div className={`message ${kind}${boxed ? ' alert' : ''}`} role={kind === 'error' ? 'alert' : 'status'} data-testid={testId}>
      <span className="message-text">{children}</span>
      <button type="button" className="btn small ghost" aria-label="Dismiss" onClick={onDismiss}>
        ×
      </button>
    </div>
  );
}
