import { useMemo } from 'react';
import type { GalleryProblem } from '../../../shared/types.ts';
import type { GalleryBackend, GalleryStatusFilter } from '../state/gallery.ts';
import { allTags, filterBackends, setFilters, useGallery } from '../state/gallery.ts';
import { useNodes } from '../state/node.ts';
import { fetchGallery } from '../state/sync.ts';
import { Loading } from './BackendsView.tsx';
import { GalleryEntry } from './GalleryEntry.tsx';
import { ActionButton } from './ActionButton.tsx';
import { VirtualList } from './VirtualList.tsx';
import { useAction } from './useAction.ts';
import { Alert } from './Message.tsx';

const STATUS_LABELS: Record<GalleryStatusFilter, string> = {
  all: 'All',
  installed: 'Installed',
  'not-installed': 'Not installed',
  upgradable: 'Upgradable',
  meta: 'Meta backends',
};

const NO_PROBLEMS: GalleryProblem[] = [];

const renderBackend = (backend: GalleryBackend) => <GalleryEntry entry={backend.followed} others={backend.others} />;
const backendKey = (backend: GalleryBackend) => backend.key;

export function GalleryView() {
  const { loaded, entries, error, filters } = useGallery((s) => s);
  const all = useMemo(() => filterBackends(entries, { query: '', status: 'all', tag: '' }).length, [entries]);
  const shown = useMemo(() => filterBackends(entries, filters), [entries, filters]);
  const tags = useMemo(() => allTags(entries), [entries]);
  const refresh = useAction(() => fetchGallery(true));
  const problems = useNodes((s) => s.nodes.find((n) => n.id === s.selected)?.info?.galleryProblems ?? NO_PROBLEMS);
  const unread = error !== null || problems.length > 0;
  return (
    <section className="view" aria-labelledby="gallery-title">
      <header className="view-header">
        <h1 id="gallery-title">Gallery</h1>
        {loaded && (
          <span className="count">
            {shown.length === all ? `${all} backend${all === 1 ? '' : 's'}` : `${shown.length} of ${all} backends`}
            {entries.length > all && `, from ${entries.length} entries`}
          </span>
        )}
        <span className="spacer" />
        <ActionButton unavailable={refresh.pending ? 'Refreshing…' : null} onAct={() => void refresh.run()}>
          {refresh.pending ? 'Refreshing…' : 'Refresh'}
        </ActionButton>
      </header>
      <div className="filters" role="search">
        <input
          type="search"
          value={filters.query}
          onChange={(e) => setFilters({ query: e.target.value })}
          placeholder="Search backends"
          aria-label="Search the gallery"
          data-testid="gallery-search"
        />
        <select
          value={filters.status}
          onChange={(e) => setFilters({ status: e.target.value as GalleryStatusFilter })}
          aria-label="Show"
          data-testid="gallery-status"
        >
          {Object.entries(STATUS_LABELS).map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
        <select value={filters.tag} onChange={(e) => setFilters({ tag: e.target.value })} aria-label="Tag" data-testid="gallery-tag">
          <option value="">Any tag</option>
          {tags.map((tag) => (
            <option key={tag} value={tag}>
              {tag}
            </option>
          ))}
        </select>
      </div>
      {error && (
        <Alert>
          Could not read the gallery: {error}
        </Alert>
      )}
      {problems.length > 0 && (
        <Alert testId="gallery-problems">
          <ul className="gallery-problems">
            {problems.map((problem) => (
              <li key={problem.message}>{problem.message}</li>
            ))}
          </ul>
        </Alert>
      )}
      {!loaded ? (
        <Loading what="the gallery" />
      ) : shown.length === 0 ? (
        <div className="empty">
          <h2>{entries.length > 0 ? 'Nothing matches' : unread ? 'No gallery could be read' : 'The gallery is empty'}</h2>
          <p className="muted">
            {entries.length > 0 ? 'Try another search or filter.' : unread ? 'See why above; Settings → Galleries changes them.' : 'No gallery of this node lists a backend (Settings → Galleries).'}
          </p>
        </div>
      ) : (
        <VirtualList items={shown} getKey={backendKey} renderItem={renderBackend} estimateSize={150} label="Gallery entries" />
      )}
    </section>
  );
}
