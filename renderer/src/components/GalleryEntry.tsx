import { memo, useState } from 'react';
import type { GalleryEntryView } from '../../../shared/types.ts';
import { offeredVersion } from '../../../shared/version-order.ts';
import { runBackendAction } from '../state/actions.ts';
import { backendsStore, useBackends } from '../state/backends.ts';
import { useOfflineReason } from '../state/connection.ts';
import type { Impact } from '../state/impact.ts';
import { alsoTouched, impactOf } from '../state/impact.ts';
import { isActive, useLatestJob } from '../state/jobs.ts';
import { isWorkerSelected, nodeStore } from '../state/node.ts';
import { JobStatus } from './JobStatus.tsx';
import { ConfirmDialog, ImpactList } from './ConfirmDialog.tsx';
import { Message } from './Message.tsx';
import { MetaBuilds } from './MetaBuilds.tsx';
import { ActionButton } from './ActionButton.tsx';
import { useAction } from './useAction.ts';

const BUSY = 'An action on this backend is under way';

const NO_OTHERS: GalleryEntryView[] = [];

/**
 * One backend name of the gallery: the entry this node installs and follows for upgrades (the first gallery that
 * lists the name), with the other galleries' entries of that name listed as other sources.
 */
export const GalleryEntry = memo(function GalleryEntry({ entry, others = NO_OTHERS }: { entry: GalleryEntryView; others?: GalleryEntryView[] }) {
  const job = useLatestJob(entry.name);
  const action = useAction(runBackendAction);
  const busy = action.pending || (job !== undefined && isActive(job));
  const offline = useOfflineReason() !== null;
  const [impact, setImpact] = useState<Impact | null>(null);
  const confirmUpgrade = () => {
    const state = backendsStore.getState();
    const backend = state.byName[entry.name];
    if (backend) setImpact(impactOf('upgrade', backend, state.modelsByBackend[entry.name] ?? [], isWorkerSelected(nodeStore.getState()), alsoTouched(state, entry.name)));
    else void action.run('upgrade', entry.name);
  };
  const installedAs = entry.meta?.installedAs ?? null;
  const installable = entry.compatible && (entry.meta === null || entry.meta.resolves !== null);
  return (
    <article className="card entry" data-testid={`gallery-entry-${entry.name}`} aria-label={`Gallery entry ${entry.name}`}>
      <header className="backend-head">
        <div className="backend-title">
          <h2>{entry.name}</h2>
          {entry.alias && <span className="pill">alias {entry.alias}</span>}
          {entry.installed && <span className="badge ok">installed</span>}
          {entry.upgradable ? <Upgrade entry={entry} /> : entry.version && <span className="version">{entry.version}</span>}
          {entry.meta && <span className="badge neutral">meta</span>}
          {!entry.compatible && <span className="badge danger">does not run here</span>}
        </div>
        <div className="actions">
          {entry.upgradable && (
            <ActionButton className="btn primary" unavailable={busy ? BUSY : null} onAct={confirmUpgrade}>
              Upgrade
            </ActionButton>
          )}
          {!entry.installed && installedAs === null && (
            <ActionButton
              className="btn primary"
              unavailable={busy ? BUSY : installable ? null : 'No build of this backend runs on this machine'}
              onAct={() => void action.run('install', entry.name)}
            >
              Install
            </ActionButton>
          )}
        </div>
      </header>
      {entry.description && <p className="description">{entry.description}</p>}
      <dl className="source">
        <div>
          <dt>Source</dt>
          <dd className="mono" title={entry.uri ?? undefined} data-testid="entry-source">
            {entry.uri ?? (entry.meta ? 'one of its builds' : 'none given')}
          </dd>
        </div>
        <div>
          <dt>Gallery</dt>
          <dd data-testid="entry-gallery">{entry.gallery}</dd>
        </div>
      </dl>
      {others.length > 0 && <OtherSources entry={entry} others={others} />}
      {entry.meta && <MetaBuilds entry={entry} meta={entry.meta} disabled={busy || offline} />}
      <div className="entry-foot">
        {entry.tags.map((tag) => (
          <span key={tag} className="tag">
            {tag}
          </span>
        ))}
        <span className="spacer" />
        {entry.license && <span className="muted small">License {entry.license}</span>}
      </div>
      {action.error && (
        <Message kind="error" boxed onDismiss={action.clearError}>
          {action.error}
        </Message>
      )}
      {job && <JobStatus job={job} />}
      {impact && (
        <ConfirmDialog open title={impact.title} confirmLabel={impact.confirmLabel} danger={false} onConfirm={() => void action.run('upgrade', entry.name)} onClose={() => setImpact(null)}>
          <ImpactList lines={impact.lines} />
        </ConfirmDialog>
      )}
    </article>
  );
});

/** As the Backends view says an upgrade: the version installed, then the one this entry offers. */
function Upgrade({ entry }: { entry: GalleryEntryView }) {
  const version = useBackends((s) => s.byName[entry.name]?.version ?? null);
  const installed = version ?? 'no version';
  const offered = offeredVersion(version, entry.version);
  return (
    <span className="version" title={`${installed} is installed; ${entry.gallery} offers ${offered}`}>
      <span data-testid="entry-installed-version">{installed}</span>
      {' → '}
      <span className="version-available" data-testid="entry-available-version">
        {offered}
      </span>
    </span>
  );
}

/** The other galleries that list this name: different sources, which this node does not follow. */
function OtherSources({ entry, others }: { entry: GalleryEntryView; others: GalleryEntryView[] }) {
  return (
    <div className="other-sources" data-testid="entry-other-sources">
      <p className="small muted">Also listed by:</p>
      <ul>
        {others.map((other) => (
          <li key={other.gallery} data-testid={`entry-source-${other.gallery}`}>
            <b>{other.gallery}</b> <span className="mono">{other.version ?? 'no version'}</span>{' '}
            <span className="mono muted" title={other.uri ?? undefined}>
              {other.uri ?? 'no source given'}
            </span>
          </li>
        ))}
      </ul>
      <p className="small muted" data-testid="entry-follows">
        This node installs and upgrades {entry.name} from <b>{entry.gallery}</b>, the first gallery that lists it. Put another gallery first in Settings
        to follow that one.
      </p>
    </div>
  );
}
