// LocalAI's upgrade rule (the ordering of versions is shared/version-order.ts).

/**
 * LocalAI's upgrade rule (core/gallery/upgrade.go): versions on both sides decide by any difference at all (a
 * downgrade or "v1.0" vs "1.0" included); a gallery version with none installed is an upgrade. Otherwise only an
 * OCI uri can tell, by its tag digest: 'digest' asks the caller to compare (see digestDiffers). There is no
 * sha256 rule.
 */
export function versionVerdict(installed: string | null, available: string | null): boolean | 'digest' {
  if (available && installed) return available !== installed;
  if (available) return true;
  return 'digest';
}

/** An installed OCI backend with no stored digest cannot be confirmed current, so it counts as upgradable. */
export function digestDiffers(installed: string | null, remote: string): boolean {
  return !installed || installed !== remote;
}

/** What LocalAI's upgrade check reads of an installed backend (metadata.json, or a worker's backend.list row). */
export interface InstalledFacts {
  version: string | null;
  digest: string | null;
  /** A meta backend follows its build and is never upgraded itself. */
  meta: boolean;
}

/**
 * LocalAI's upgrade rule for one installed backend against its gallery entry: any version difference, a gallery
 * version over none, else (an OCI uri only) the tag's digest. `remoteDigest` answers null when it cannot tell.
 */
export async function upgradeOffered(
  installed: InstalledFacts,
  entry: { uri: string | null; version: string | null },
  isOci: (uri: string) => boolean,
  remoteDigest: (uri: string) => Promise<string | null>,
): Promise<boolean> {
  if (installed.meta || !entry.uri) return false;
  const verdict = versionVerdict(installed.version, entry.version);
  if (verdict !== 'digest') return verdict;
  if (!isOci(entry.uri)) return false;
  const remote = await remoteDigest(entry.uri);
  return remote !== null && digestDiffers(installed.digest, remote);
}
