// Galleries can list the same backend name. As LocalAI decides it, the entry of the first gallery (in the node's
// gallery order, names compared without case) is the one a node installs and follows for upgrades; an entry of
// another gallery is a different source of that name, never "installed" or "upgradable" itself.

export interface Sources<T> {
  /** The lower-cased name the entries share. */
  key: string;
  /** The entry a node installs and follows. */
  followed: T;
  /** Entries of later galleries with the same name, in gallery order. */
  others: T[];
}

/** Entries grouped by name, each group in the order of its first entry. */
export function sourcesByName<T extends { name: string }>(entries: readonly T[]): Sources<T>[] {
  const groups = new Map<string, Sources<T>>();
  for (const entry of entries) {
    const key = entry.name.toLowerCase();
    const group = groups.get(key);
    if (group) group.others.push(entry);
    else groups.set(key, { key, followed: entry, others: [] });
  }
  return [...groups.values()];
}

/** Lower-cased name → the entry a node follows for it. */
export function followedByName<T extends { name: string }>(entries: readonly T[]): Map<string, T> {
  return new Map(sourcesByName(entries).map((group) => [group.key, group.followed]));
}
