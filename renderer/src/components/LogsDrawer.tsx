import { useEffect, useLayoutEffect, useRef } from 'react';
import { closeLogs, useLogs } from '../state/logs.ts';
import { Alert } from './Message.tsx';

/** How close to the bottom (px) still counts as "following" the tail. */
const FOLLOW_SLACK = 24;

/** A live tail of one process's output. Follows new lines unless the user scrolled up. */
export function LogsDrawer() {
  const { model, lines, loading, error } = useLogs((s) => s);
  const bodyRef = useRef<HTMLDivElement>(null);
  const closeRef = useRef<HTMLButtonElement>(null);
  const following = useRef(true);

  useEffect(() => {
    if (model) {
      following.current = true;
      closeRef.current?.focus();
    }
  }, [model]);

  useLayoutEffect(() => {
    const body = bodyRef.current;
    if (body && following.current) body.scrollTop = body.scrollHeight;
  }, [lines]);

  if (!model) return null;
  return (
    <aside
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
