import { memo, useState } from 'react';
import type { LeftoverAction } from '../../../shared/api.ts';
import { iecBytes } from '../../../shared/progress.ts';
import type { BackendKind } from '../../../shared/types.ts';
import { offeredVersion } from '../../../shared/version-order.ts';
import type { BackendAction } from '../state/actions.ts';
import { resolveLeftover, runBackendAction } from '../state/actions.ts';
import type { BackendInfo } from '../state/backends.ts';
import { backendsStore, useBackends } from '../state/backends.ts';
import { isWorkerSelected, useNodes, useRefusal } from '../state/node.ts';
import { isActive, useLatestJob } from '../state/jobs.ts';
import { alsoTouched, impactOf, leftoverImpact, type Impact } from '../state/impact.ts';
import { ActionButton } from './ActionButton.tsx';
import { ConfirmDialog, ImpactList } from './ConfirmDialog.tsx';
import { Alert, Message } from './Message.tsx';
import { JobStatus } from './JobStatus.tsx';
import { LoadModelForm } from './LoadModelForm.tsx';
import { ProcessChip } from './ProcessChip.tsx';
import { useAction } from './useAction.ts';

const NO_MODELS: string[] = [];

const KIND_LABELS: Record<Exclude<BackendKind, 'backend'>, string> = {
  alias: 'LocalAI alias',
  leftover: 'LocalAI leftover',
  foreign: 'not managed by Hangar',
  kept: 'kept from a deleted backend',
};

/** One installed backend. Subscribes by name, so other backends' events never re-render it. */
export const BackendRow = memo(function BackendRow({ name }: { name: string }) {
  const backend = useBackends((s) => s.byName[name]);
  const models = useBackends((s) => s.modelsByBackend[name] ?? NO_MODELS);
  const job = useLatestJob(name);
  const onWorker = useNodes(isWorkerSelected);
  if (!backend) return null;
  const busy = job !== undefined && isActive(job);
  return (
    <article className="card backend" data-testid={`backend-row-${name}`} aria-label={`Backend ${name}`}>
      <header className="backend-head">
        <div className="backend-title">
          <h2>{name}</h2>
          {backend.kind !== 'backend' && (
            <span className={`pill kind-${backend.kind}`} data-testid="backend-kind">
              {KIND_LABELS[backend.kind]}
            </span>
          )}
          {backend.alias && <span className="pill">alias {backend.alias}</span>}
          {backend.metaBackendFor && <span className="pill">meta → {backend.metaBackendFor}</span>}
          {backend.runs !== null && backend.runs !== backend.name && backend.runs !== backend.metaBackendFor && (
            <span className="pill runs" data-testid="backend-runs">
              runs {backend.runs}
            </span>
          )}
          <span className="version">
            <span data-testid="backend-version">{backend.version ?? 'no version'}</span>
            {backend.upgradable && (
              <>
                {' → '}
                <span className="version-available" data-testid="backend-available-version">
                  {offeredVersion(backend.version, backend.availableVersion)}
                </span>
              </>
            )}
          </span>
        </div>
        {backend.kind === 'backend' && <BackendActions backend={backend} models={models} busy={busy} />}
        {backend.kind === 'leftover' && <LeftoverActions backend={backend} />}
        {backend.kind !== 'backend' && backend.kept && <KeptActions backend={backend} busy={busy} />}
      </header>
      <Source backend={backend} />
      {backend.upgradesUnknown && (
        <p className="muted small" data-testid="backend-upgrades-unknown">
          Upgrades unknown: {backend.upgradesUnknown}
        </p>
      )}
      {backend.broken && (
        <Alert testId="backend-broken">
          <strong>Broken:</strong> {backend.broken}
          {backend.kind === 'backend' && '. Reinstall puts it right.'}
        </Alert>
      )}
      {backend.localai.length > 0 && (
        <ul className="localai-notes" aria-label={`How LocalAI sees ${name}`} data-testid="backend-localai">
          {backend.localai.map((note) => (
            <li key={note}>{note}</li>
          ))}
        </ul>
      )}
      {job && <JobStatus job={job} />}
      {models.length > 0 && (
        <ul className="chips" aria-label={`Processes of ${name}`}>
          {models.map((model) => (
            <ProcessChip key={model} model={model} />
          ))}
        </ul>
      )}
      {(backend.kind === 'backend' || backend.kind === 'alias') && (
        <footer className="backend-foot">
          {models.length === 0 && <span className="muted small">{onWorker ? "LocalAI's frontend loads models here: see Processes" : 'No model loaded'}</span>}
          <LoadModelForm backend={name} />
        </footer>
      )}
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
      {backend.kept && (
        <div>
          <dt>Kept</dt>
          <dd data-testid="backend-kept">
            {iecBytes(backend.kept.bytes)}, removed on {backend.kept.expiresAt.slice(0, 10)}
          </dd>
        </div>
      )}
    </dl>
  );
}

type Confirmed = Exclude<BackendAction, 'install'>;

/** What an action set shows below its buttons: the error its last action ended with, and the confirmation it asks. */
function ActionOutcome(props: { error: string | null; clearError(): void; impact: Impact | null; onConfirm(): void; onClose(): void }) {
  const { impact } = props;
  return (
    <>
      {props.error && (
        <Message kind="error" boxed onDismiss={props.clearError}>
          {props.error}
        </Message>
      )}
      {impact && (
        <ConfirmDialog open title={impact.title} confirmLabel={impact.confirmLabel} danger={impact.danger} onConfirm={props.onConfirm} onClose={props.onClose}>
          <ImpactList lines={impact.lines} />
        </ConfirmDialog>
      )}
    </>
  );
}

/** What LocalAI left behind: put a backup back (when its backend is gone), or delete it. */
function LeftoverActions({ backend }: { backend: BackendInfo }) {
  const [confirming, setConfirming] = useState<LeftoverAction | null>(null);
  const action = useAction((kind: LeftoverAction) => resolveLeftover(backend.name, kind));
  const blocked = action.pending ? 'Working…' : null;
  const restorable = backend.leftover?.restorable
    ? null
    : backend.leftover && /backup$/.test(backend.leftover.suffix)
      ? `${backend.leftover.of} is installed: this copy cannot replace it`
      : 'A partial download: there is nothing whole to put back';
  return (
    <div className="actions">
      <ActionButton className="btn primary" unavailable={blocked ?? restorable} data-testid="action-restore" onAct={() => setConfirming('restore')}>
        Restore
      </ActionButton>
      <ActionButton className="btn danger-text" unavailable={blocked} data-testid="action-delete" onAct={() => setConfirming('delete')}>
        Delete
      </ActionButton>
      <ActionOutcome {...action} impact={confirming ? leftoverImpact(confirming, backend) : null} onConfirm={() => void action.run(confirming!)} onClose={() => setConfirming(null)} />
    </div>
  );
}

/** A rollback tree whose backend was deleted outside Hangar: it can only be deleted (it goes by itself in time). */
function KeptActions({ backend, busy }: { backend: BackendInfo; busy: boolean }) {
  const [confirming, setConfirming] = useState(false);
  const action = useAction(() => runBackendAction('delete', backend.name));
  const blocked = busy ? 'Another action on this backend is under way' : action.pending ? 'Starting…' : null;
  return (
    <div className="actions">
      <ActionButton className="btn danger-text" unavailable={blocked} data-testid="action-delete" onAct={() => setConfirming(true)}>
        Delete
      </ActionButton>
      <ActionOutcome {...action} impact={confirming ? impactOf('delete', backend, []) : null} onConfirm={() => void action.run()} onClose={() => setConfirming(false)} />
    </div>
  );
}

/**
 * Upgrade, Reinstall, Rollback and Delete always sit in the same slots: one that does not apply is disabled with
 * its reason, never removed, so nothing moves under the cursor. Each asks first, with what it will do.
 */
function BackendActions({ backend, models, busy }: { backend: BackendInfo; models: string[]; busy: boolean }) {
  const [confirming, setConfirming] = useState<Confirmed | null>(null);
  const onWorker = useNodes(isWorkerSelected);
  const noRollback = useRefusal('rollback');
  const action = useAction((kind: BackendAction) => runBackendAction(kind, backend.name));
  const blocked = busy ? 'Another action on this backend is under way' : action.pending ? 'Starting…' : null;
  const slot = (kind: Confirmed, label: string, unavailable: string | null, className = 'btn') => (
    <ActionButton className={className} unavailable={blocked ?? unavailable} data-testid={`action-${kind}`} onAct={() => setConfirming(kind)}>
      {label}
    </ActionButton>
  );
  const impact = confirming ? impactOf(confirming, backend, models, onWorker, alsoTouched(backendsStore.getState(), backend.name)) : null;
  return (
    <div className="actions">
      {slot('upgrade', 'Upgrade', backend.upgradable ? null : 'Up to date with its gallery', 'btn primary')}
      {slot('reinstall', 'Reinstall', null)}
      {slot('rollback', 'Rollback', noRollback ?? (backend.previous ? null : 'No previous version to go back to'))}
      {slot('delete', 'Delete', null, 'btn danger-text')}
      <ActionOutcome {...action} impact={impact} onConfirm={() => void action.run(confirming!)} onClose={() => setConfirming(null)} />
    </div>
  );
}
