import { useLayoutEffect, useRef } from 'react';
import type { ReactNode } from 'react';

interface ConfirmDialogProps {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  /** A red confirm button for what cannot be undone. */
  danger?: boolean;
  onConfirm: () => void;
  onClose: () => void;
}

/**
 * A modal confirmation on the native <dialog>: focus trap, Escape and backdrop come for free. When it closes, or is
 * taken away while open, focus goes back to what had it when it opened: the control that opened it.
 */
export function ConfirmDialog({ open, title, children, confirmLabel, danger = true, onConfirm, onClose }: ConfirmDialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  useLayoutEffect(() => {
    const dialog = ref.current;
    if (!open || !dialog) return;
    const opener = document.activeElement;
    if (!dialog.open) dialog.showModal();
    return () => {
      // While a modal dialog is open the rest of the page is inert and cannot take focus.
      if (dialog.open) dialog.close();
      if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
    };
  }, [open]);
  return (
    <dialog ref={ref} className="dialog" onClose={onClose} aria-label={title}>
      <h2>{title}</h2>
      <div className="dialog-body">{children}</div>
      <div className="dialog-actions">
        <button type="button" className="btn" onClick={onClose} autoFocus>
          Cancel
        </button>
        <button
          type="button"
          className={danger ? 'btn danger' : 'btn primary'}
          onClick={() => {
            onConfirm();
            onClose();
          }}
        >
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/** What a confirmed action will do, one line each. */
export function ImpactList({ lines }: { lines: readonly string[] }) {
  return (
    <ul className="impact" data-testid="impact">
      {lines.map((line) => (
        <li key={line}>{line}</li>
      ))}
    </ul>
  );
}
