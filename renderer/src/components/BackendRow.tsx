import { memo, useState } from 'react';
import type { BackendAction } from '../state/actions.ts';
import { runBackendAction } from '../state/actions.ts';
import type { BackendInfo } from '../state/backends.ts';
import { useBackends } from '../state/backends.ts';
import { isActive, useLatestJob } from '../state/jobs.ts';
import { ConfirmDialog } from './ConfirmDialog.tsx';
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
        <BackendActions backend={backend} busy={busy} />
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

function BackendActions({ backend, busy }: { backend: BackendInfo; busy: boolean }) {
  const [confirming, setConfirming] = useState(false);
  const action = useAction((kind: BackendAction) => runBackendAction(kind, backend.name));
  const disabled = busy || action.pending;
  const button = (kind: BackendAction, label: string, title?: string) => (
    <button type="button" className="btn" disabled={disabled} title={title} onClick={() => void action.run(kind)}>
      {label}
    </button>
  );
  return (
    <div className="actions">
      {backend.upgradable && (
        <button type="button" className="btn primary" disabled={disabled} onClick={() => void action.run('upgrade')}>
          Upgrade
        </button>
      )}
      {button('reinstall', 'Reinstall', 'Install again from the gallery, replacing this copy')}
      {backend.previous && button('rollback', 'Rollback', `Go back to ${backend.previous.version ?? 'the previous install'}`)}
      <button type="button" className="btn danger-text" disabled={disabled} onClick={() => setConfirming(true)}>
        Delete
      </button>
      {action.error && (
        <p className="alert error action-error" role="alert">
          {action.error}
        </p>
      )}
      <ConfirmDialog
        open={confirming}
        title={`Delete ${backend.name}?`}
        confirmLabel="Delete"
        onConfirm={() => void action.run('delete')}
        onClose={() => setConfirming(false)}
      >
        Its running processes are stopped and its directory is removed
        {backend.metaBackendFor && <>, and so is its build {backend.metaBackendFor} (as LocalAI does)</>}. This cannot be undone.
      </ConfirmDialog>
    </div>
  );
}
