// What the selected nodes have and offer of one backend, asked with their galleries re-read first (a version
// published a minute ago counts). A rollout or a pin of a name, or a version, that no node knows is a typo: it is
// refused before anything is recorded, so no node chases it.
import type { NodeApi } from '../../../shared/api.ts';
import { HangarError } from '../../../shared/errors.ts';
import { describeSelector } from '../../../shared/selector.ts';
import type { NodeCard } from '../../../shared/types.ts';

export interface Offers {
  /** How many nodes answered. */
  asked: number;
  /** Whether one of them has the backend installed or a gallery entry of its name. */
  known: boolean;
  /** Every version of it their galleries list or they run. */
  versions: Set<string>;
  /** The version each node's gallery offers it as an upgrade: the names of the nodes by version. */
  upgrades: Map<string, string[]>;
  /** The selected nodes' names by id, to name them in a refusal. */
  names: Map<string, string>;
}

export async function askOffers(api: NodeApi, members: NodeCard[], backend: string): Promise<Offers> {
  const offers: Offers = { asked: 0, known: false, versions: new Set(), upgrades: new Map(), names: new Map(members.map((m) => [m.id, m.name])) };
  const reachable = members.filter((m) => m.status === 'online' && m.access !== 'not-trusted');
  await Promise.all(reachable.map(async (m) => {
    const answer = await Promise.all([api.gallery({ node: m.id, refresh: true }), api.backends({ node: m.id })]).catch(() => null);
    if (!answer) return;
    const [entries, installed] = answer;
    offers.asked++;
    for (const e of entries.filter((e) => e.name === backend)) {
      offers.known = true;
      if (e.version) offers.versions.add(e.version);
    }
    const found = installed.find((b) => b.name === backend);
    if (!found) return;
    offers.known = true;
    if (found.version) offers.versions.add(found.version);
    if (found.upgradable && found.availableVersion !== null && found.availableVersion !== found.version) {
      offers.upgrades.set(found.availableVersion, [...(offers.upgrades.get(found.availableVersion) ?? []), m.name]);
    }
  }));
  return offers;
}

/**
 * Refuses a backend no node answering knows, and a version none of their galleries lists (nor runs). With no node
 * answering there is nothing to check against: a pin is kept for the nodes to take when they are back.
 */
export function checkOffered(offers: Offers, backend: string, version: string | null, on: string): void {
  if (offers.asked === 0) return;
  const asked = on === 'all' ? '' : ` (${describeSelector(on, (id) => offers.names.get(id))} asked)`;
  if (!offers.known) throw new HangarError('not-found', `no node${asked} has ${backend} installed or in a gallery (see hangar gallery --on all)`);
  if (version !== null && !offers.versions.has(version)) {
    const listed = [...offers.versions].sort();
    throw new HangarError('not-found', `no node${asked} offers ${backend} ${version}${listed.length > 0 ? `: their galleries and installs have ${listed.join(', ')}` : ''}`);
  }
}
