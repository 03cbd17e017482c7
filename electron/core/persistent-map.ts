// A map whose every version stays as it was, while the next version costs only what changed, not a copy of all of
// it. The newest version holds the entries in a plain Map, changed in place to make the next one; the version it
// replaces keeps only the entries that differ, as they were (Baker's trick for persistent arrays). So the newest
// version reads at a Map's speed, and an older one walks the differences up to the newest: slower, never wrong.
// An older version read whole (iterated) becomes a plain Map of its own again.

const ABSENT = Symbol('absent');

export class PersistentMap<K, V> implements Iterable<[K, V]> {
  /** The entries, on the newest version (or one made whole again). */
  #entries: Map<K, V> | null;
  /** Otherwise: the version made from this one, and this one's entries where they differ from it. */
  #newer: PersistentMap<K, V> | null = null;
  #differences: Map<K, V | typeof ABSENT> | null = null;
  readonly size: number;

  private constructor(entries: Map<K, V>) {
    this.#entries = entries;
    this.size = entries.size;
  }

  /** A first version: `entries` itself, which the caller no longer touches. */
  static adopt<K, V>(entries: Map<K, V>): PersistentMap<K, V> {
    return new PersistentMap(entries);
  }

  static of<K, V>(entries: Iterable<readonly [K, V]> = []): PersistentMap<K, V> {
    return new PersistentMap(new Map(entries));
  }

  /** The next version: this one with `changes` applied in order (a value of undefined deletes the key). */
  with(changes: Iterable<readonly [K, V | undefined]>): PersistentMap<K, V> {
    // Made from an older version, the next one is a branch: that version is made whole first, the newest stays.
    const entries = this.whole();
    const differences = new Map<K, V | typeof ABSENT>();
    for (const [key, value] of changes) {
      if (!differences.has(key)) differences.set(key, entries.has(key) ? entries.get(key)! : ABSENT);
      if (value === undefined) entries.delete(key);
      else entries.set(key, value);
    }
    const next = new PersistentMap(entries);
    this.#entries = null;
    this.#newer = next;
    this.#differences = differences;
    return next;
  }

  get(key: K): V | undefined {
    const found = this.lookup(key);
    return found === ABSENT ? undefined : found;
  }

  has(key: K): boolean {
    return this.lookup(key) !== ABSENT;
  }

  // Iterators run over a copy: the entries of the newest version change when the next one is made.
  keys(): IterableIterator<K> {
    return [...this.whole().keys()].values();
  }

  values(): IterableIterator<V> {
    return [...this.whole().values()].values();
  }

  entries(): IterableIterator<[K, V]> {
    return [...this.whole().entries()].values();
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.entries();
  }

  private lookup(key: K): V | typeof ABSENT {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- walking the versions from this one
    let version: PersistentMap<K, V> = this;
    while (version.#entries === null) {
      const differences = version.#differences!;
      if (differences.has(key)) return differences.get(key)!;
      version = version.#newer!;
    }
    return version.#entries.has(key) ? version.#entries.get(key)! : ABSENT;
  }

  /** This version's own entries: an older version's are made from the newest's, and kept as its own from then on. */
  private whole(): Map<K, V> {
    if (this.#entries !== null) return this.#entries;
    const steps: PersistentMap<K, V>[] = [];
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- walking the versions from this one
    let version: PersistentMap<K, V> = this;
    while (version.#entries === null) {
      steps.push(version);
      version = version.#newer!;
    }
    const entries = new Map(version.#entries);
    for (const step of steps.reverse()) {
      for (const [key, value] of step.#differences!) {
        if (value === ABSENT) entries.delete(key);
        else entries.set(key, value);
      }
    }
    this.#entries = entries;
    this.#newer = null;
    this.#differences = null;
    return entries;
  }
}
