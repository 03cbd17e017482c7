import { useState } from 'react';
import { upgradeAll } from '../state/actions.ts';
import { backendsStore, useBackends } from '../state/backends.ts';
import type { Impact } from '../state/impact.ts';
import { upgradeAllImpact } from '../state/impact.ts';
import { showView } from '../state/ui.ts';
import { BackendRow } from './BackendRow.tsx';
import { ActionButton } from './ActionButton.tsx';
import { ConfirmDialog, ImpactList } from './ConfirmDialog.tsx';
import { VirtualList } from './VirtualList.tsx';
import { useAction } from './useAction.ts';
import { WorkerNote } from './WorkerNote.tsx';
import { Alert } from './Message.tsx';

const renderRow = (name: string) => <BackendRow name={name} />;
const byItself = (name: string) => name;

export function BackendsView() {
  const loaded = useBackends((s) => s.loaded);
  const names = useBackends((s) => s.names);
  const installed = useBackends((s) => s.names.filter((n) => s.byName[n]?.kind === 'backend').length);
  return (
    <section className="view" aria-labelledby="backends-title">
      <header className="view-header">
        <h1 id="backends-title">Backends</h1>
        {loaded && <span className="count">{installed} installed</span>}
        <span className="spacer" />
        <UpgradeAll />
      </header>
      <WorkerNote />
      {!loaded ? (
        <Loading what="backends" />
      ) : names.length === 0 ? (
        <div className="empty" data-testid="backends-empty">
          <h2>No backends installed yet</h2>
          <p className="muted">Install one from the gallery to run models on this machine.</p>
          <button type="button" className="btn primary" onClick={() => showView('gallery')}>
            Browse the gallery
          </button>
        </div>
      ) : (
        <VirtualList items={names} getKey={byItself} renderItem={renderRow} estimateSize={190} label="Installed backends" />
      )}
    </section>
  );
}

function UpgradeAll() {
  const any = useBackends((s) => s.names.some((n) => s.byName[n]?.upgradable));
  const action = useAction(upgradeAll);
  const [summary, setSummary] = useState<string | null>(null);
  const [impact, setImpact] = useState<Impact | null>(null);
  if (!any && !summary && !action.error) return null;
  const confirmFirst = () => {
    const state = backendsStore.getState();
    setImpact(upgradeAllImpact(state.names.map((n) => state.byName[n]!), state.modelsByBackend));
  };
  return (
    <div className="header-actions">
      {summary && <span className="muted small">{summary}</span>}
      {action.error && <Alert inline>{action.error}</Alert>}
      {any && (
        <ActionButton
          className="btn primary"
          unavailable={action.pending ? 'Starting the upgrades…' : null}
          onAct={confirmFirst}
        >
          Upgrade all
        </ActionButton>
      )}
      {impact && (
        <ConfirmDialog
          open
          title={impact.title}
          confirmLabel={impact.confirmLabel}
          danger={false}
          onClose={() => setImpact(null)}
          onConfirm={async () => {
            setSummary(null);
            const results = await action.run();
            if (!results) return;
            const failed = results.filter((r) => !r.ok);
            setSummary(
              failed.length === 0
                ? `Started ${results.length} upgrade${results.length === 1 ? '' : 's'}`
                : `${failed.length} could not start: ${failed.map((r) => `${r.backend} (${r.error})`).join(', ')}`,
            );
          }}
        >
          <ImpactList lines={impact.lines} />
        </ConfirmDialog>
      )}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <div className="loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> Loading {what}…
    </div>
  );
}
