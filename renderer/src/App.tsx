import { useSyncExternalStore } from 'react';
import type { Transport } from './bridge/transport.ts';
import { BackendsView } from './components/BackendsView.tsx';
import { ConnectionBanner } from './components/ConnectionBanner.tsx';
import { GalleryView } from './components/GalleryView.tsx';
import { LogsDrawer } from './components/LogsDrawer.tsx';
import { NotificationsButton, NotificationsView } from './components/NotificationsView.tsx';
import { ProcessesView } from './components/ProcessesView.tsx';
import { SignIn } from './components/SignIn.tsx';
import { Sidebar } from './components/Sidebar.tsx';
import { Toasts } from './components/Toasts.tsx';
import { useNodes } from './state/node.ts';
import { useUi } from './state/ui.ts';

interface AppProps {
  transport: Transport;
  onSignIn: (token: string) => void;
  onRetry: () => void;
  /** True when a token was offered and refused (as opposed to none offered yet). */
  tokenRejected: () => boolean;
}

export function App({ transport, onSignIn, onRetry, tokenRejected }: AppProps) {
  const status = useSyncExternalStore(transport.onStatus, transport.status);
  const view = useUi((s) => s.view);
  const error = useNodes((s) => s.error);
  if (status === 'unauthorized') return <SignIn onSubmit={onSignIn} rejected={tokenRejected()} />;
  return (
    <div className="app">
      <Sidebar />
      <main className="main">
        <ConnectionBanner status={status} />
        {error && (
          <div className="alert error page-alert" role="alert">
            <span>Could not load this node: {error}</span>
            <button type="button" className="btn small" onClick={onRetry}>
              Retry
            </button>
          </div>
        )}
        {view === 'backends' && <BackendsView />}
        {view === 'gallery' && <GalleryView />}
        {view === 'processes' && <ProcessesView />}
        {view === 'notifications' && <NotificationsView />}
      </main>
      <LogsDrawer />
      <Toasts />
      <NotificationsButton />
    </div>
  );
}
