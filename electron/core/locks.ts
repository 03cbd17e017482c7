// Per-key locks for a node's backends: work that changes a backend's tree runs alone on its key (`run`); work on
// one model of it (load, respawn, stop) runs beside other such work (`shared`), never beside a `run`. Waiters are
// served in the order they came, so a swap is not starved by a stream of loads.

interface KeyState {
  /** Settles when the last `run` queued on the key has finished. */
  tail: Promise<void>;
  /** `shared` work started since that `run` was queued. */
  readers: Set<Promise<void>>;
  pending: number;
  /** `run` work queued or running. */
  runs: number;
}

const settled = (p: Promise<unknown>): Promise<void> => p.then(
  () => undefined,
  () => undefined,
);

export class KeyedLock {
  private readonly keys = new Map<string, KeyState>();

  /** Runs `work` alone on `key`: after everything queued before it, before anything queued after it. */
  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const state = this.enter(key);
    const before = Promise.all([state.tail, ...state.readers]);
    state.runs++;
    const next = before.then(work).finally(() => state.runs--);
    state.tail = settled(next);
    state.readers = new Set();
    return this.leave(key, state, next);
  }

  /** Runs `work` beside other shared work on `key`, after the `run` queued before it. */
  shared<T>(key: string, work: () => Promise<T>): Promise<T> {
    const state = this.enter(key);
    const next = state.tail.then(work);
    const reader = settled(next);
    state.readers.add(reader);
    void reader.then(() => state.readers.delete(reader));
    return this.leave(key, state, next);
  }

  /** Whether `run` work on `key` is queued or running. */
  running(key: string): boolean {
    return (this.keys.get(key)?.runs ?? 0) > 0;
  }

  private enter(key: string): KeyState {
    let state = this.keys.get(key);
    if (!state) {
      state = { tail: Promise.resolve(), readers: new Set(), pending: 0, runs: 0 };
      this.keys.set(key, state);
    }
    state.pending++;
    return state;
  }

  private leave<T>(key: string, state: KeyState, next: Promise<T>): Promise<T> {
    void settled(next).then(() => {
      if (--state.pending === 0 && this.keys.get(key) === state) this.keys.delete(key);
    });
    return next;
  }
}
