// The node's settings in effect: what the host's options fix for the run, and each change applied where it acts.
import type { NodeSettings } from '../../../shared/types.ts';
import { STARTER_LOCATION } from '../../../shared/schemas.ts';
import type { Galleries } from '../gallery/index.ts';
import type { SettingsStore } from '../settings.ts';
import type { Supervisor } from '../supervisor/index.ts';
import type { LocalNodeOptions } from './options.ts';

const HOUR_MS = 60 * 60 * 1000;

/** What the host's options fix for this run. */
export function fixedSettings(options: LocalNodeOptions, galleryNames: string[]): Partial<NodeSettings> {
  const { galleries, autoUpgrade, startBackendsOnLaunch, supervisor, labels } = options;
  const startTimeoutMs = supervisor?.startTimeoutMs;
  return {
    ...(galleries && { galleries: galleries.map((spec, i) => ({ name: galleryNames[i]!, location: spec.location, enabled: true })) }),
    ...(autoUpgrade !== undefined && { autoUpgrade }),
    ...(labels !== undefined && { labels }),
    ...(startBackendsOnLaunch !== undefined && { startBackendsOnLaunch }),
    ...(supervisor?.portRange && { portRange: supervisor.portRange }),
    ...(startTimeoutMs !== undefined && { startTimeoutSec: Math.round(startTimeoutMs / 1000) }),
  };
}

export interface LiveSettingsParts {
  options: Pick<LocalNodeOptions, 'galleries' | 'starterGallery'>;
  store: SettingsStore;
  galleries: Galleries;
  supervisor: Pick<Supervisor, 'setPortRange' | 'setStartTimeout'>;
  /** What the auto-upgrade timer does each time it fires. */
  autoUpgrade(): void;
}

export class LiveSettings {
  private autoUpgradeTimer: NodeJS.Timeout | undefined;

  constructor(private readonly parts: LiveSettingsParts) {}

  /** Makes the changed settings take effect; those only the host acts on (quit, launch) need nothing here. */
  apply(changed: (keyof NodeSettings)[]): void {
    const { options, store, galleries, supervisor } = this.parts;
    const settings = store.current();
    if (changed.includes('galleries') && options.galleries === undefined) {
      const enabled = settings.galleries.filter((g) => g.enabled && (g.location !== STARTER_LOCATION || options.starterGallery));
      galleries.reconfigure(enabled.map((g) => ({ name: g.name, location: g.location === STARTER_LOCATION ? options.starterGallery! : g.location })));
    }
    if (changed.includes('portRange')) supervisor.setPortRange(settings.portRange);
    if (changed.includes('startTimeoutSec') || changed.includes('backendStartTimeoutSec')) {
      const perBackend = Object.fromEntries(Object.entries(settings.backendStartTimeoutSec).map(([name, s]) => [name, s * 1000]));
      supervisor.setStartTimeout(settings.startTimeoutSec * 1000, perBackend);
    }
    if (changed.includes('autoUpgrade') || changed.includes('autoUpgradeHours')) {
      clearInterval(this.autoUpgradeTimer);
      this.autoUpgradeTimer = settings.autoUpgrade ? setInterval(() => this.parts.autoUpgrade(), settings.autoUpgradeHours * HOUR_MS).unref() : undefined;
    }
  }

  close(): void {
    clearInterval(this.autoUpgradeTimer);
  }
}
