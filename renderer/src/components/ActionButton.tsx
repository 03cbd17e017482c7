import type { ButtonHTMLAttributes } from 'react';
import { useOfflineReason } from '../state/connection.ts';

interface ActionButtonProps extends Omit<ButtonHTMLAttributes<HTMLButtonElement>, 'disabled' | 'type'> {
  /** Why this action cannot be taken now, or null. The agent being unreachable is added by itself. */
  unavailable?: string | null;
  onAct: () => void;
}

/**
 * A button that acts on the node. When it cannot act it stays in place and focusable, says why (title and
 * accessible description), and drops the click: nothing is queued to run later.
 */
export function ActionButton({ unavailable = null, onAct, className = 'btn', children, ...rest }: ActionButtonProps) {
  const offline = useOfflineReason();
  const reason = offline ?? unavailable;
  return (
    <button
      {...rest}
      type="button"
      className={className}
      aria-disabled={reason !== null}
      title={reason ?? rest.title}
      onClick={() => {
        if (reason === null) onAct();
      }}
    >
      {children}
    </button>
  );
}
