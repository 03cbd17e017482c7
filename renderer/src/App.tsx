import { useSyncExternalStore } from 'react';
import type { Transport } from './bridge/transport.ts';
import { BackendsView } from './components/BackendsView.tsx';
import { ClusterBanner } from './components/ClusterBanner.tsx';
import { ClusterView } from './components/ClusterView.tsx';
import { ConnectionBanner } from './components/ConnectionBanner.tsx';
import { GalleryView } from './components/GalleryView.tsx';
import { LogsDrawer } from './components/LogsDrawer.tsx';
import { NotificationsButton, NotificationsView } from './components/NotificationsView.tsx';
import { ProcessesView } from './components/ProcessesView.tsx';
import { SettingsView } from './components/SettingsView.tsx';
import { WorkerSettingsView } from './components/LocalAiSettings.tsx';
import { SignIn } from './components/SignIn.tsx';
import { Sidebar } from './components/Sidebar.tsx';
import { Toasts } from './components/Toasts.tsx';
import { useBackends } from './state/backends.ts';
import { isWorkerSelected, offlineReason, useNodes } from './state/node.ts';
import { useUi } from './state/ui.ts';
import { Alert } from './components/Message.tsx';

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
  const selected = useNodes((s) => s.selected);
  const offline = useNodes(offlineReason);
  const worker = useNodes(isWorkerSelected);
  const loaded = useBackends((s) => s.loaded);
  const selectedLabel = useNodes((s) => s.nodes.find((n) => n.id === s.selected)?.label ?? s.selected);
  if (status === 'unauthorized') return <SignIn onSubmit={onSignIn} rejected={tokenRejected()} />;
  return (
    <div className="app">
      <Sidebar />
      <main className="main">
        <ConnectionBanner status={status} />
        <ClusterBanner />
        {error && (
          <Alert className="page-alert">
            <span>Could not load this node: {error}</span>
            <button type="button" className="btn small" onClick={onRetry}>
              Retry
            </button>
          </Alert>
        )}
        {offline && view !== 'cluster' && view !== 'notifications' && (
          <div className="alert muted page-alert" role="status" data-testid="node-offline">
            {selectedLabel} is {offline}: its actions are off until it is back.
          </div>
        )}
        {view === 'cluster' ? (
          <ClusterView />
        ) : view === 'notifications' ? (
          <NotificationsView />
        ) : offline && !loaded ? null : (
          // A disabled fieldset turns off every control of an offline node's views at once.
          <fieldset className="node-views" disabled={offline !== null} key={selected}>
            {view === 'backends' && <BackendsView />}
            {view === 'gallery' && <GalleryView />}
            {view === 'processes' && <ProcessesView />}
            {view === 'settings' && (worker ? <WorkerSettingsView /> : <SettingsView />)}
          </fieldset>
        )}
      </main>
      <LogsDrawer />
      <Toasts />
      <NotificationsButton />
    </div>
  );
}
