// The cluster's desired versions as a viewer reads and writes them: each writer's own per backend, kept in the
// cluster's store (signed by the viewer that wrote it), the newest one this host takes in force; with what each node
// last said of its own convergence.
import type { ClusterStatusView, DesiredStateView, DesiredVersion, NodeEvent } from '../../../shared/types.ts';
import { HangarError } from '../../../shared/errors.ts';
import { backendOfKey, desiredKey, type DesiredBody, type StatusBody } from '../../cluster/store/bodies.ts';
import type { RecordEntry, Records } from '../../cluster/store/records.ts';

const EMIT_DEBOUNCE_MS = 50;

export interface DesiredStateOptions {
  records: Records<DesiredBody>;
  status: Records<StatusBody>;
  /** The key id this host writes under. */
  writer: string;
  store(): ClusterStatusView['store'];
  emit(event: NodeEvent): void;
  /** The name the cluster knows a key by, from its id; null when none is known. */
  nameOf?(keyId: string): string | null;
  /** Whether node `id` is listed no more (revoked long ago): what it last said of itself is not shown either. */
  forgotten?(id: string): boolean;
}

/** The value in force for each backend: of those taken, the one the store took last (its revision is the highest). */
export function inForce(records: Records<DesiredBody>): Map<string, RecordEntry<DesiredBody>> {
  const newest = new Map<string, RecordEntry<DesiredBody>>();
  for (const entry of records.all()) {
    const backend = backendOfKey(entry.key);
    const known = newest.get(backend);
    if (!known || entry.revision > known.revision) newest.set(backend, entry);
  }
  return newest;
}

export class DesiredState {
  private timer: NodeJS.Timeout | undefined;
  private readonly changed = () => {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.options.emit({ type: 'desired', node: 'local', desired: this.snapshot() }), EMIT_DEBOUNCE_MS);
  };

  constructor(private readonly options: DesiredStateOptions) {
    options.records.on('change', this.changed);
    options.status.on('change', this.changed);
  }

  async view(): Promise<DesiredStateView> {
    await Promise.all([this.options.records.ready(), this.options.status.ready()]);
    return this.snapshot();
  }

  /** The pin in force for `backend` (an unpin leaves none). */
  current(backend: string): DesiredBody | null {
    const body = inForce(this.options.records).get(backend)?.value;
    return body && body.version !== null ? body : null;
  }

  async pin(body: DesiredBody & { version: string }): Promise<DesiredVersion> {
    return this.versionOf(await this.write(body))!;
  }

  /** Kept as a signed unpin rather than deleted, so an older pin written back over it is seen for what it is. */
  async unpin(backend: string): Promise<void> {
    await this.write({ backend, version: null, on: 'all', installMissing: false, rollout: null });
  }

  /** Gives back what a rollout replaced, unless a later pin replaced the rollout's own meanwhile. */
  async restore(backend: string, rollout: string, previous: DesiredBody | null): Promise<void> {
    if (this.current(backend)?.rollout !== rollout) return;
    if (previous?.version) await this.write(previous);
    else await this.unpin(backend);
  }

  close(): void {
    clearTimeout(this.timer);
    this.options.records.off('change', this.changed);
    this.options.status.off('change', this.changed);
  }

  /**
   * Under this host's own key; the store gives it a revision past every value written before, so every reader takes
   * it as the one in force. Should another writer's value already be heard past it, the write is said to have lost.
   */
  private async write(body: DesiredBody): Promise<RecordEntry<DesiredBody>> {
    const key = desiredKey(body.backend, this.options.writer);
    await this.options.records.put(key, body);
    const written = this.options.records.get(key)!;
    const newest = inForce(this.options.records).get(body.backend)!;
    if (newest.key !== key) throw new HangarError('conflict', `${body.backend}: a later desired version by key ${newest.by} is in force; this one is not`);
    return written;
  }

  private snapshot(): DesiredStateView {
    const store = this.options.store();
    return {
      available: store.available,
      reason: store.reason,
      desired: [...inForce(this.options.records).values()].flatMap((e) => this.versionOf(e) ?? []).sort((a, b) => a.backend.localeCompare(b.backend)),
      nodes: this.options.status.all().flatMap((e) => (this.options.forgotten?.(e.key) ? [] : e.value.convergence)),
    };
  }

  private versionOf(entry: RecordEntry<DesiredBody>): DesiredVersion | null {
    const { backend, version, on, installMissing, rollout } = entry.value;
    if (version === null) return null;
    const byName = this.options.nameOf?.(entry.by) ?? null;
    return { backend, version, on, installMissing, rollout, by: entry.by, at: new Date(entry.at).toISOString(), ...(byName !== null && { byName }) };
  }
}
