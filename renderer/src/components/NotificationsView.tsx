import { clearNotifications, useNotices } from '../state/notifications.ts';
import { showView, useUi } from '../state/ui.ts';

/** Opens the history; it sits after the page in tab order, so it never comes between a view and its content. */
export function NotificationsButton() {
  const count = useNotices().length;
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

/** What every node keeps of its jobs and the host of its rollouts, newest first, and what this page saw. */
export function NotificationsView() {
  const notices = useNotices();
  return (
    <section className="view" aria-labelledby="notifications-title">
      <header className="view-header">
        <h1 id="notifications-title">Notifications</h1>
        <span className="count">{notices.length}</span>
        <span className="spacer" />
        <button type="button" className="btn" disabled={notices.length === 0} onClick={clearNotifications} title="Hides these in this browser; the nodes keep their history">
          Clear
        </button>
      </header>
      {notices.length === 0 ? (
        <div className="empty">
          <h2>No notifications</h2>
          <p className="muted">Finished, failed and cancelled jobs, rollouts, and errors, are listed here.</p>
        </div>
      ) : (
        <ol className="history" data-testid="notifications">
          {notices.map((notice) => (
            <li key={notice.key} className={`history-item ${notice.kind}`}>
              <time dateTime={new Date(notice.at).toISOString()}>{when(notice.at)}</time>
              <span className="history-kind">{notice.kind === 'error' ? 'Error' : 'Info'}</span>
              <span>{notice.text}</span>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

/** The time for today's notices, the date and time for older ones (the nodes keep them across days). */
function when(at: number): string {
  const date = new Date(at);
  return date.toDateString() === new Date().toDateString() ? date.toLocaleTimeString() : date.toLocaleString();
}
