// Version ordering and upgrade detection for gallery entries against installed backends.

interface ParsedVersion {
  release: number[];
  prerelease: string[];
}

/** "v1.2.3-rc.1+build" style: a dotted numeric release, an optional pre-release, build metadata ignored. */
function parseVersion(text: string): ParsedVersion | null {
  const match = /^v?(\d+(?:\.\d+)*)(?:[-.~]?([0-9A-Za-z][0-9A-Za-z.-]*))?(?:\+[0-9A-Za-z.-]*)?$/i.exec(text.trim());
  if (!match) return null;
  return { release: match[1]!.split('.').map(Number), prerelease: match[2] ? match[2].split(/[.-]/) : [] };
}

const naturalOrder = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });

/** Negative when a < b, positive when a > b, 0 when equal. Numeric-aware; falls back to natural text order. */
export function compareVersions(a: string, b: string): number {
  const left = parseVersion(a);
  const right = parseVersion(b);
  if (!left || !right) return Math.sign(naturalOrder.compare(a, b));
  const length = Math.max(left.release.length, right.release.length);
  for (let i = 0; i < length; i++) {
    const diff = (left.release[i] ?? 0) - (right.release[i] ?? 0);
    if (diff !== 0) return Math.sign(diff);
  }
  return comparePrerelease(left.prerelease, right.prerelease);
}

// A release without a pre-release tag ranks above any pre-release of it (1.0.0 > 1.0.0-rc.1).
function comparePrerelease(a: string[], b: string[]): number {
  if (a.length === 0 || b.length === 0) return Math.sign(b.length - a.length);
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const diff = compareIdentifier(a[i]!, b[i]!);
    if (diff !== 0) return diff;
  }
  return Math.sign(a.length - b.length);
}

function compareIdentifier(a: string, b: string): number {
  const numeric = /^\d+$/;
  if (numeric.test(a) && numeric.test(b)) return Math.sign(Number(a) - Number(b));
  if (numeric.test(a) !== numeric.test(b)) return numeric.test(a) ? -1 : 1;
  return Math.sign(naturalOrder.compare(a, b));
}

interface Fingerprint {
  version: string | null;
  sha256: string | null;
  digest: string | null;
}

/**
 * Whether `available` should replace `installed`. Versions decide when both sides have one (newer wins; versions
 * that do not parse count as upgradable when they differ). Otherwise a differing sha256, then a differing digest
 * (the caller supplies the remote digest). With nothing to compare, nothing is upgradable.
 */
export function isUpgradable(installed: Fingerprint, available: Fingerprint): boolean {
  if (installed.version && available.version) {
    if (parseVersion(installed.version) && parseVersion(available.version)) {
      return compareVersions(available.version, installed.version) > 0;
    }
    return installed.version.trim() !== available.version.trim();
  }
  if (installed.sha256 && available.sha256) return installed.sha256.toLowerCase() !== available.sha256.toLowerCase();
  if (installed.digest && available.digest) return installed.digest !== available.digest;
  return false;
}
