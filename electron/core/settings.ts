// A node's settings, kept in `<home>/state/settings.json`. A host may fix some of them for its run (an agent started
// with --gallery, say): those read as fixed and cannot be changed until it restarts. A file that is unreadable or
// fails validation is reported and replaced by the defaults, never half-applied. A change counts once it is on disk:
// one that cannot be written (a full disk) is refused and changes nothing. A gallery's password (in its URL) is kept
// in the file, readable by its owner only, and never shown: a view's copy of the URL hides it, and a change that
// sends that copy back keeps the password.
import { join } from 'node:path';
import { HangarError } from '../../shared/errors.ts';
import { hidePasswords } from '../../shared/url-password.ts';
import { nodeSettings, STARTER_LOCATION } from '../../shared/schemas.ts';
import type { NodeSettings, SettingsView } from '../../shared/types.ts';
import { KeyedLock } from './locks.ts';
import { readJsonFile, writeJsonFile } from './state-file.ts';

export const DEFAULT_SETTINGS: NodeSettings = {
  galleries: [{ name: 'starter', location: STARTER_LOCATION, enabled: true }],
  autoUpgrade: false,
  autoUpgradeHours: 6,
  portRange: [30100, 30999],
  keepBackendsRunning: false,
  startBackendsOnLaunch: false,
  labels: {},
  cordoned: false,
  smokeStart: true,
  localaiRespawn: true,
  localaiAutostart: false,
  // Big GPU builds import torch or map a large model before they answer Health.
  startTimeoutSec: 600,
  backendStartTimeoutSec: {},
};

/** What a host can fix, in the words the CLI and the Settings view give it (not the file's keys). */
const FIXABLE_WORDS: Partial<Record<keyof NodeSettings, string>> = {
  autoUpgrade: 'auto-upgrade',
  startBackendsOnLaunch: 'start-on-launch',
  portRange: 'the port range',
  startTimeoutSec: 'the start timeout',
};

export class SettingsStore {
  private readonly path: string;
  private saved: NodeSettings = DEFAULT_SETTINGS;
  /** Changes are written one after another, each over the one before it. */
  private readonly writing = new KeyedLock();
  /** Why the saved file was not used, if it was not. */
  problem: string | null = null;

  constructor(
    stateDir: string,
    private readonly fixed: Partial<NodeSettings>,
  ) {
    this.path = join(stateDir, 'settings.json');
  }

  async load(): Promise<void> {
    const raw = await readJsonFile(this.path);
    if (raw === null) return;
    const parsed = nodeSettings.partial().safeParse(raw);
    if (parsed.success) this.saved = { ...DEFAULT_SETTINGS, ...parsed.data };
    else this.problem = `${this.path} was not used: ${parsed.error.issues[0]?.message ?? 'invalid'}`;
  }

  current(): NodeSettings {
    return { ...this.saved, ...this.fixed };
  }

  view(): SettingsView {
    const settings = this.current();
    const galleries = settings.galleries.map((g) => ({ ...g, location: hidePasswords(g.location) }));
    return { settings: { ...settings, galleries }, fixed: Object.keys(this.fixed) as (keyof NodeSettings)[] };
  }

  /** `patch` with each gallery location a view showed (its password hidden) given back as the one kept. */
  withPasswordsKept(patch: Partial<NodeSettings>): Partial<NodeSettings> {
    if (!patch.galleries) return patch;
    const kept = new Map(this.current().galleries.map((g) => [hidePasswords(g.location), g.location]));
    return { ...patch, galleries: patch.galleries.map((g) => ({ ...g, location: kept.get(g.location) ?? g.location })) };
  }

  /** Refuses a patch that changes what the host fixed for its run. */
  refuseFixed(patch: Partial<NodeSettings>): void {
    const fixed = (Object.keys(patch) as (keyof NodeSettings)[]).filter((key) => key in this.fixed).map((key) => FIXABLE_WORDS[key] ?? key);
    if (fixed.length > 0) throw new HangarError('conflict', `${fixed.join(', ')} ${fixed.length === 1 ? 'is' : 'are'} fixed for this run by how the host was started`);
  }

  /** Writes `patch` over the saved settings, then keeps it; returns the keys whose value changed. */
  async update(patch: Partial<NodeSettings>): Promise<(keyof NodeSettings)[]> {
    const keys = Object.keys(patch) as (keyof NodeSettings)[];
    this.refuseFixed(patch);
    return this.writing.run(this.path, async () => {
      const next = { ...this.saved, ...patch };
      await writeJsonFile(this.path, next, { mode: 0o600 }).catch((error: Error) => {
        throw new HangarError('failed', `the settings were not changed: ${error.message}`);
      });
      const changed = keys.filter((key) => JSON.stringify(patch[key]) !== JSON.stringify(this.saved[key]));
      this.saved = next;
      return changed;
    });
  }

  /** Resolves when every change asked for so far has been written or refused. */
  flush(): Promise<void> {
    return this.writing.run(this.path, async () => undefined);
  }
}
