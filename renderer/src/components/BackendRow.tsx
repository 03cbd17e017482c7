import { memo, useState } from 'react';
import type { BackendAction } from '../state/actions.ts';
import { runBackendAction } from '../state/actions.ts';
import type { BackendInfo } from '../state/backends.ts';
import { useBackends } from '../state/backends.ts';
import { isActive, useLatestJob } from '../state/jobs.ts';
import { impactOf } from '../state/impact.ts';
import { ActionButton } from './ActionButton.tsx';
import { ConfirmDialog, ImpactList } from './ConfirmDialog.tsx';
import { Message } from './Message.tsx';
import { JobStatus } from './JobStatus.tsx';
import { LoadModelForm } from './LoadModelForm.tsx';
import { ProcessChip } from './ProcessChip.tsx';
import { useAction } from './useAction.ts';

const NO_MODELS: string[] = [];

/** One installed backend. Subscribes by name, so other backends' events never re-render it. */
export const BackendRow = memo(function BackendRow({ name }: { name: string }) {
  const backend = useBackends((s) => s.byName[name]);
  const models = useBackends((s) => s.modelsByBackend[name] ?? NO_MODELS);
  const job = useLatestJob(name);
  if (!backend) return null;
  const busy = job !== undefined && isActive(job);
  return (
    <article className="card backend" data-testid={`backend-row-${name}`} aria-label={`Backend ${name}`}>
      <header className="backend-head">
        <div className="backend-title">
          <h2>{name}</h2>
          {backend.alias && <span className="pill">alias {backend.alias}</span>}
          {backend.metaBackendFor && <span className="pill">meta → {backend.metaBackendFor}</span>}
          <span className="version">
            <span data-testid="backend-version">{backend.version ?? 'no version'}</span>
            {backend.upgradable && (
              <>
                {' → '}
                <span className="version-available" data-testid="backend-available-version">
                  {backend.availableVersion ?? 'newer'}
                </span>
              </>
            )}
          </span>
        </div>
        <BackendActions backend={backend} models={models} busy={busy} />
      </header>
      <Source backend={backend} />
      {backend.broken && (
        <p className="alert error" role="alert" data-testid="backend-broken">
          <strong>Broken:</strong> {backend.broken}
        </p>
      )}
      {job && <JobStatus job={job} />}
      {models.length > 0 && (
        <ul className="chips" aria-label={`Processes of ${name}`}>
          {models.map((model) => (
            <ProcessChip key={model} model={model} />
          ))}
        </ul>
      )}
      <footer className="backend-foot">
        {models.length === 0 && <span className="muted small">No model loaded</span>}
        <LoadModelForm backend={name} />
      </footer>
    </article>
  );
});

function Source({ backend }: { backend: BackendInfo }) {
  return (
    <dl className="source">
      <div>
        <dt>Source</dt>
        <dd className="mono" title={backend.uri ?? undefined}>{backend.uri ?? 'unknown'}</dd>
      </div>
      <div>
        <dt>Gallery</dt>
        <dd>{backend.gallery ?? '—'}</dd>
      </div>
      {backend.previous && (
        <div>
          <dt>Previous</dt>
          <dd data-testid="backend-previous">{backend.previous.version ?? 'unversioned'}</dd>
        </div>
      )}
    </dl>
  );
}

type Confirmed = Exclude<BackendAction, 'install'>;

/**
 * Upgrade, Reinstall, Rollback and Delete always sit in the same slots: one that does not apply is disabled with
 * its reason, never removed, so nothing moves under the cursor. Each asks first, with what it will do.
 */
function BackendActions({ backend, models, busy }: { backend: BackendInfo; models: string[]; busy: boolean }) {
  const [confirming, setConfirming] = useState<Confirmed | null>(null);
  const action = useAction((kind: BackendAction) => runBackendAction(kind, backend.name));
  const blocked = busy ? 'Another action on this backend is under way' : action.pending ? 'Starting…' : null;
  const slot = (kind: Confirmed, label: string, unavailable: string | null, className = 'btn') => (
    <ActionButton className={className} unavailable={blocked ?? unavailable} data-testid={`action-${kind}`} onAct={() => setConfirming(kind)}>
      {label}
    </ActionButton>
  );
  const impact = confirming ? impactOf(confirming, backend, models) : null;
  return (
    <div className="actions">
      {slot('upgrade', 'Upgrade', backend.upgradable ? null : 'Up to date with its gallery', 'btn primary')}
      {slot('reinstall', 'Reinstall', null)}
      {slot('rollback', 'Rollback', backend.previous ? null : 'No previous version to go back to')}
      {slot('delete', 'Delete', null, 'btn danger-text')}
      {action.error && (
        <Message kind="error" boxed onDismiss={action.clearError}>
          {action.error}
        </Message>
      )}
      {confirming && impact && (
        <ConfirmDialog
          open
          title={impact.title}
          confirmLabel={impact.confirmLabel}
          danger={impact.danger}
          onConfirm={() => void action.run(confirming)}
          onClose={() => setConfirming(null)}
        >
          <ImpactList lines={impact.lines} />
        </ConfirmDialog>
      )}
    </div>
  );
}
