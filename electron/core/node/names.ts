// Which installed backend a name means: a gallery qualifier checked, then the build LocalAI runs for the name.
import { HangarError } from '../../../shared/errors.ts';
import type { Galleries } from '../gallery/index.ts';
import type { DirectorySnapshot } from '../localai-rows.ts';
import type { BackendTarget } from '../supervisor/index.ts';

/** `name` of `gallery@name`. */
export function unqualified(name: string): string {
  return name.slice(name.indexOf('@') + 1);
}

export class BackendNames {
  constructor(
    private readonly galleries: Galleries,
    private readonly snapshot: () => Promise<DirectorySnapshot>,
  ) {}

  /** Installed backends are addressed by plain name; a gallery qualifier must name a configured gallery. */
  plain(name: string): string {
    const at = name.indexOf('@');
    if (at >= 0 && !this.galleries.names().includes(name.slice(0, at))) {
      throw new HangarError('not-found', `no gallery named "${name.slice(0, at)}" (galleries: ${this.galleries.names().join(', ') || 'none'})`);
    }
    return unqualified(name);
  }

  /**
   * Backends a per-backend setting is given for anew (not in `kept`) are installed: a mistyped name is refused, not
   * kept for nothing. One kept for a backend deleted since may still be changed.
   */
  async refuseUninstalled(given: Record<string, unknown> | undefined, kept: Record<string, unknown>): Promise<void> {
    const snapshot = await this.snapshot();
    const unknown = Object.keys(given ?? {}).find((name) => !(name in kept) && snapshot.directory(name) === null);
    if (unknown !== undefined) throw new HangarError('not-found', `backend ${unknown} is not installed`);
  }

  /** What `load NAME` starts: the build LocalAI runs for that name (an alias group wins over a meta's own build). */
  async target(requested: string): Promise<BackendTarget> {
    return (await this.snapshot()).target(this.plain(requested));
  }
}
