// Settings that hold secrets (a password, a token, an API key), changed from a view that never sees them.

/** A secret left out keeps the one already kept; an empty one removes it. */
export function withSecretsKept<T extends object>(next: T, before: T | null, secrets: readonly (keyof T)[]): T {
  const merged: T = { ...next };
  for (const key of secrets) {
    const value = next[key] ?? before?.[key];
    if (value) merged[key] = value;
    else delete merged[key];
  }
  return merged;
}
