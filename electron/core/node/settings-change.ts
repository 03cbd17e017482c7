// A change of a node's settings, and what it must pass before it is written: nothing the host fixed for its run, a
// backend's own start timeout given for an installed backend, and a gallery it adds readable now unless it is forced in.
import { HangarError } from '../../../shared/errors.ts';
import { galleryRefusal } from '../../../shared/gallery-refusal.ts';
import type { GallerySetting, NodeSettings } from '../../../shared/types.ts';
import { galleryLocationProblem } from '../gallery/index.ts';
import type { SettingsStore } from '../settings.ts';
import type { LiveSettings } from './live-settings.ts';
import type { BackendNames } from './names.ts';

/** Checks the change, keeps it and applies it; returns the settings whose value changed. */
export async function changeSettings(
  given: Partial<NodeSettings>,
  force: boolean,
  parts: { store: SettingsStore; names: BackendNames; live: LiveSettings },
): Promise<(keyof NodeSettings)[]> {
  const patch = parts.store.withPasswordsKept(given);
  await refuseSettingsChange(patch, force, parts);
  const changed = await parts.store.update(patch);
  parts.live.apply(changed);
  return changed;
}

async function refuseSettingsChange(patch: Partial<NodeSettings>, force: boolean, parts: { store: SettingsStore; names: BackendNames }): Promise<void> {
  parts.store.refuseFixed(patch);
  const kept = parts.store.current();
  await parts.names.refuseUninstalled(patch.backendStartTimeoutSec, kept.backendStartTimeoutSec);
  if (!force) await refuseUnreadableGalleries(patch.galleries ?? [], kept.galleries);
}

/**
 * A gallery at a location the node does not read yet is read and parsed first, as the node will read it; the first
 * that cannot be is refused. Galleries kept, reordered, turned on or off are not read again: a change to them is not
 * held up by one that is down for now.
 */
async function refuseUnreadableGalleries(given: GallerySetting[], kept: GallerySetting[]): Promise<void> {
  const known = new Set(kept.map((g) => g.location));
  for (const gallery of given.filter((g) => !known.has(g.location))) {
    const problem = await galleryLocationProblem(gallery.location);
    if (problem) throw new HangarError('bad-input', galleryRefusal(problem));
  }
}
