// Settings → Galleries: the galleries the node reads, in order, each turned on or off or removed, and a new one added
// once the node has read it; one the node cannot read now is refused in the form, which keeps what was typed and
// offers to add it anyway.
import { useState, type ChangeEvent, type FormEvent } from 'react';
import { galleryNameFor } from '../../../shared/gallery-name.ts';
import { isGalleryRefusal } from '../../../shared/gallery-refusal.ts';
import { STARTER_LOCATION } from '../../../shared/schemas.ts';
import type { GallerySetting, SettingsView } from '../../../shared/types.ts';
import { addGallery, settingsProblem } from '../state/settings.ts';
import { Alert } from './Message.tsx';
import { Section } from './SettingControls.tsx';
import { useAction } from './useAction.ts';

interface GalleriesProps {
  view: SettingsView;
  busy: boolean;
  /** Why galleries fixed by how the node was started cannot change. */
  fixedReason: string;
  save(galleries: GallerySetting[]): void;
}

export function Galleries({ view, busy, fixedReason, save }: GalleriesProps) {
  const galleries = view.settings.galleries;
  const fixed = view.fixed.includes('galleries');
  const disabled = busy || fixed;
  const move = (index: number, by: number) => {
    const next = [...galleries];
    next.splice(index + by, 0, ...next.splice(index, 1));
    save(next);
  };
  return (
    <Section title="Galleries" fixedReason={fixed ? fixedReason : null}>
      <p className="muted">In order: when two galleries list a backend, the first one wins.</p>
      <ul className="settings-galleries" data-testid="settings-galleries">
        {galleries.map((g, index) => (
          <li key={g.name} className="setting-gallery" data-testid={`settings-gallery-${g.name}`}>
            <label className="setting-toggle">
              <input
                type="checkbox"
                checked={g.enabled}
                disabled={disabled}
                aria-label={`Read the ${g.name} gallery`}
                onChange={(e) => save(galleries.map((o) => (o === g ? { ...o, enabled: e.target.checked } : o)))}
              />
              <span>
                {g.name}
                <span className="muted setting-hint">{g.location === STARTER_LOCATION ? 'The gallery that ships with Hangar' : g.location}</span>
              </span>
            </label>
            <span className="spacer" />
            <button type="button" className="btn small ghost" disabled={disabled || index === 0} onClick={() => move(index, -1)} aria-label={`Move ${g.name} up`}>
              Up
            </button>
            <button
              type="button"
              className="btn small ghost"
              disabled={disabled || index === galleries.length - 1}
              onClick={() => move(index, 1)}
              aria-label={`Move ${g.name} down`}
            >
              Down
            </button>
            <button
              type="button"
              className="btn small danger-text"
              disabled={disabled || g.location === STARTER_LOCATION}
              title={g.location === STARTER_LOCATION ? 'The starter gallery can be turned off, not removed' : undefined}
              onClick={() => save(galleries.filter((o) => o !== g))}
              aria-label={`Remove ${g.name}`}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      <AddGallery galleries={galleries} disabled={disabled} />
    </Section>
  );
}

/**
 * Nothing is shown as added until the node has read the location and kept it: a read may take seconds, and a gallery
 * shown at once would vanish again when it is refused. Controls stay enabled while it reads, so focus stays put.
 */
function AddGallery({ galleries, disabled }: { galleries: GallerySetting[]; disabled: boolean }) {
  const [location, setLocation] = useState('');
  const [name, setName] = useState('');
  const adding = useAction(addGallery);
  const added: GallerySetting = { name: name || galleryNameFor(location), location, enabled: true };
  const problem = location === '' ? null : settingsProblem({ galleries: [...galleries, added] });
  const add = async (force: boolean) => {
    if (location === '' || problem || adding.pending) return;
    if (await adding.run([...galleries, added], force)) {
      setLocation('');
      setName('');
    }
  };
  const typed = (set: (value: string) => void) => (e: ChangeEvent<HTMLInputElement>) => {
    set(e.target.value.trim());
    adding.clearError();
  };
  return (
    <>
      <form
        className="setting-row"
        onSubmit={(e: FormEvent) => {
          e.preventDefault();
          void add(false);
        }}
        aria-label="Add a gallery"
      >
        <label className="field grow">
          Index location
          <input
            value={location}
            disabled={disabled}
            onChange={typed(setLocation)}
            placeholder="https://…/index.yaml or /path/to/index.yaml"
            data-testid="settings-gallery-location"
          />
        </label>
        <label className="field">
          Name
          <input
            value={name}
            disabled={disabled}
            onChange={typed(setName)}
            placeholder={location ? galleryNameFor(location) : 'optional'}
            data-testid="settings-gallery-name"
          />
        </label>
        <button type="submit" className="btn small primary" disabled={disabled || location === '' || problem !== null} aria-busy={adding.pending} data-testid="settings-gallery-add">
          {adding.pending ? 'Reading it…' : 'Add gallery'}
        </button>
        {problem && <span className="muted setting-problem">{problem}</span>}
      </form>
      {adding.error && (
        <div className="setting-refusal">
          <Alert inline testId="settings-gallery-refused">
            {adding.error}
          </Alert>
          {isGalleryRefusal(adding.error) && (
            <button type="button" className="btn small" disabled={disabled} onClick={() => void add(true)} data-testid="settings-gallery-force">
              Add anyway
            </button>
          )}
        </div>
      )}
    </>
  );
}
