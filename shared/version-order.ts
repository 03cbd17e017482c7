// Version ordering: which way an upgrade goes (a rollout's words, a gallery that went back, LocalAI's reload order).
// Shared: the CLI compares versions without loading the gallery's code.

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

// Made on first use: a collator costs every command that loads this file about 8 ms of ICU set-up.
let collator: Intl.Collator | undefined;
const naturalOrder = () => (collator ??= new Intl.Collator('en', { numeric: true, sensitivity: 'base' }));

/** Negative when a < b, positive when a > b, 0 when equal. Numeric-aware; falls back to natural text order. */
export function compareVersions(a: string, b: string): number {
  const left = parseVersion(a);
  const right = parseVersion(b);
  if (!left || !right) return Math.sign(naturalOrder().compare(a, b));
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
  return Math.sign(naturalOrder().compare(a, b));
}

/**
 * What an upgrade brings, as every client says it after "→": the version on offer, or "new build" when the version is
 * the one installed (LocalAI upgrades on a new image digest alone), or "newer" when none is known.
 */
export function offeredVersion(installed: string | null | undefined, available: string | null | undefined): string {
  if (!available) return 'newer';
  return available === installed ? 'new build' : available;
}
