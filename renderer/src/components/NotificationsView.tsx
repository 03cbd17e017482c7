import { clearHistory, useHistory } from '../state/toasts.ts';
import { showView, useUi } from '../state/ui.ts';

/** Opens the history; it sits after the page in tab order, so it never comes between a view and its content. */
export function NotificationsButton() {
  const count = useHistory().length;
  const current = useUi((s) => s.view === 'notifications');
  return (
    <button
      type="button"
      className="btn notifications-button"
      aria-current={current ? 'page' : undefined}
      data-testid="nav-notifications"
      onClick={() => showView('notifications')}
    >
      Notifications{count > 0 ? ` (${count})` : ''}
    </button>
  );
}

/** Every notification since the window opened, newest first. */
export function NotificationsView() {
  const history = useHistory();
  return (
    <section className="view" aria-labelledby="notifications-title">
      <header className="view-header">
        <h1 id="notifications-title">Notifications</h1>
        <span className="count">{history.length}</span>
        <span className="spacer" />
        <button type="button" className="btn" disabled={history.length === 0} onClick={clearHistory}>
          Clear
        </button>
      </header>
      {history.length === 0 ? (
        <div className="empty">
          <h2>No notifications</h2>
          <p className="muted">Finished and failed jobs, and errors, are listed here.</p>
        </div>
      ) : (
        <ol className="history" data-testid="notifications">
          {history.map((notice) => (
            <li key={notice.id} className={`history-item ${notice.kind}`}>
              <time dateTime={new Date(notice.at).toISOString()}>{new Date(notice.at).toLocaleTimeString()}</time>
              <span className="history-kind">{notice.kind === 'error' ? 'Error' : 'Info'}</span>
              <span>{notice.text}</span>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
