import type { ButtonHTMLAttributes } from 'react';
import { useOfflineReason } from '../state/connection.ts';

interface BaseProps extends Omit<ButtonHTMLAttributes<HTMLButtonElement>, 'disabled' | 'type' | 'onClick'> {
  /** Why this action cannot be taken now, or null. The agent being unreachable is added by itself. */
  unavailable?: string | null;
}

/** Acts on click; or, as its form's submit button, lets the form act (`onSubmit`). */
type ActionButtonProps = BaseProps & ({ onAct: () => void; submit?: never } | { submit: true; onAct?: never });

/**
 * A button that acts on the node. When it cannot act it stays in place and focusable, says why (title and
 * accessible description), and drops the click (a submit button's too, Enter in its form's fields included):
 * nothing is queued to run later.
 */
export function ActionButton({ unavailable = null, onAct, submit, className = 'btn', children, ...rest }: ActionButtonProps) {
  const offline = useOfflineReason();
  const reason = offline ?? unavailable;
  return (
    <button
      {...rest}
      type={submit ? 'submit' : 'button'}
      className={className}
      aria-disabled={reason !== null}
      title={reason ?? rest.title}
      onClick={(e) => {
        if (reason !== null) e.preventDefault();
        else onAct?.();
      }}
    >
      {children}
    </button>
  );
}
