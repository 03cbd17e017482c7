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

interface AlertProps {
  children: ReactNode;
  testId?: string;
  /** Within a line of text or a row of buttons, not a block of its own. */
  inline?: boolean;
  className?: string;
}

/**
 * An error that stays until what it says is mended: a view that could not be read, a form the host refused. Beside
 * it, Message is an action's result the user dismisses, and a toast a job's end: the renderer shows errors these three
 * ways only.
 */
export function Alert({ children, testId, inline = false, className }: AlertProps) {
  const Tag = inline ? 'span' : 'div';
  return (
    <Tag className={['alert', 'error', inline && 'inline', className].filter(Boolean).join(' ')} role="alert" data-testid={testId}>
      {children}
    </Tag>
  );
}
