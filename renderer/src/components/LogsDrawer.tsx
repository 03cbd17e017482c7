import { useEffect, useLayoutEffect, useRef } from 'react';
import { closeLogs, useLogs } from '../state/logs.ts';
import { Alert } from './Message.tsx';

/** How close to the bottom (px) still counts as "following" the tail. */
const FOLLOW_SLACK = 24;

/** A live tail of one process's output. Follows new lines unless the user scrolled up. */
export function LogsDrawer() {
  const { model, lines, loading, error } = useLogs((s) => s);
  const drawerRef = useRef<HTMLElement>(null);
  const bodyRef = useRef<HTMLDivElement>(null);
  const closeRef = useRef<HTMLButtonElement>(null);
  const following = useRef(true);
  /** The control that opened the drawer, which has focus again when it closes. */
  const opener = useRef<HTMLElement | null>(null);

  useEffect(() => {
    if (model) {
      const active = document.activeElement;
      // Another Logs clicked while the drawer is open opens it anew; focus inside the drawer opened nothing.
      if (active instanceof HTMLElement && !drawerRef.current?.contains(active)) opener.current = active;
      following.current = true;
      closeRef.current?.focus();
    } else if (opener.current) {
      // Only focus the drawer took with it goes back: a drawer closed from elsewhere leaves focus where it is.
      const lost = document.activeElement === null || document.activeElement === document.body;
      if (lost && opener.current.isConnected) opener.current.focus();
      opener.current = null;
    }
  }, [model]);

  useLayoutEffect(() => {
    const body = bodyRef.current;
    if (body && following.current) body.scrollTop = body.scrollHeight;
  }, [lines]);

  if (!model) return null;
  return (
    <aside
      ref={drawerRef}
      className="drawer"
      role="dialog"
      aria-label={`Logs of ${model}`}
      data-testid="logs-drawer"
      onKeyDown={(e) => {
        if (e.key === 'Escape') closeLogs();
      }}
    >
      <header className="drawer-head">
        <h2>
          Logs <span className="muted">· {model}</span>
        </h2>
        <button ref={closeRef} type="button" className="btn small" onClick={closeLogs} aria-label="Close logs">
          Close
        </button>
      </header>
      <div
        ref={bodyRef}
        className="log-body"
        tabIndex={0}
        aria-live="off"
        data-testid="log-body"
        onScroll={(e) => {
          const el = e.currentTarget;
          following.current = el.scrollHeight - el.scrollTop - el.clientHeight < FOLLOW_SLACK;
        }}
      >
        {loading && <p className="muted">Loading…</p>}
        {error && <Alert>{error}</Alert>}
        {!loading && !error && lines.length === 0 && <p className="muted">No output yet.</p>}
        {lines.map((line, i) => (
          <div key={i} className={`log-line ${line.stream}`}>
            <time dateTime={line.at}>{new Date(line.at).toLocaleTimeString([], { hour12: false })}</time>
            <span>{line.text}</span>
          </div>
        ))}
      </div>
    </aside>
  );
}
