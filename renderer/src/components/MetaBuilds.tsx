// The hardware variant picker of a meta gallery entry: every build it lists, the one this node installs and why,
// builds that do not run here, and the user's own pick (remembered by the node).
import type { GalleryEntryView, MetaResolution } from '../../../shared/types.ts';
import { chooseVariant } from '../state/actions.ts';
import { useRefusal } from '../state/node.ts';
import { ActionButton } from './ActionButton.tsx';
import { Message } from './Message.tsx';
import { useAction } from './useAction.ts';

export function MetaBuilds({ entry, meta, disabled }: { entry: GalleryEntryView; meta: MetaResolution; disabled: boolean }) {
  const pick = useAction(chooseVariant);
  // A LocalAI worker resolves a meta backend by its own capability: no build can be picked for it.
  const refused = useRefusal('chooseVariant');
  const busy = disabled || pick.pending || refused !== null;
  return (
    <div className="builds" data-testid="meta-builds">
      {meta.installedAs ? (
        <p className="small" data-testid="meta-installed-as">
          Installed as <b>{meta.installedAs}</b>
        </p>
      ) : (
        <p className="small" data-testid="meta-resolves">
          {meta.resolves ? (
            <>
              Installs <b>{meta.resolves}</b> on this node
            </>
          ) : (
            <>No build runs on this node</>
          )}
          <span className="muted"> · {meta.reason}</span>
        </p>
      )}
      <fieldset className="build-list" disabled={busy || meta.installedAs !== null} title={refused ?? undefined}>
        <legend className="muted small">Builds{refused && <span data-testid="meta-refused"> · {refused}</span>}</legend>
        {meta.variants.map((variant) => {
          const chosen = variant.capability === meta.capability;
          return (
            <label key={variant.capability} className={`build${chosen ? ' chosen' : ''}`} data-testid={`build-${variant.capability}`}>
              <input
                type="radio"
                name={`build-${entry.gallery}-${entry.name}`}
                checked={chosen}
                disabled={!variant.compatible}
                onChange={() => void pick.run(entry.name, variant.capability)}
              />
              <span className="build-key">{variant.capability}</span>
              <span className="build-name">{variant.backend}</span>
              {chosen && <span className="badge ok">{meta.picked ? 'your pick' : 'chosen for this machine'}</span>}
              {!variant.compatible && <span className="badge neutral">does not run here</span>}
            </label>
          );
        })}
      </fieldset>
      {meta.picked && meta.installedAs === null && (
        <ActionButton unavailable={busy ? (refused ?? 'Under way…') : null} onAct={() => void pick.run(entry.name, null)}>
          Use the automatic choice
        </ActionButton>
      )}
      {pick.error && (
        <Message kind="error" boxed onDismiss={pick.clearError}>
          {pick.error}
        </Message>
      )}
    </div>
  );
}
