// The cluster's desired versions as a viewer reads and writes them: one per backend, kept in the cluster's store
// (signed by the viewer that wrote it), with what each node last said of its own convergence.
import type { ClusterStatusView, DesiredStateView, DesiredVersion, NodeEvent } from '../../shared/types.ts';
import type { DesiredBody, StatusBody } from './store/bodies.ts';
import type { RecordEntry, Records } from './store/records.ts';

const EMIT_DEBOUNCE_MS = 50;

export interface DesiredStateOptions {
  records: Records<DesiredBody>;
  status: Records<StatusBody>;
  store(): ClusterStatusView['store'];
  emit(event: NodeEvent): void;
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
    const body = this.options.records.get(backend)?.value;
    return body && body.version !== null ? body : null;
  }

  async pin(body: DesiredBody & { version: string }): Promise<DesiredVersion> {
    await this.options.records.put(body.backend, body);
    return versionOf(this.options.records.get(body.backend)!)!;
  }

  /** Kept as a signed unpin rather than deleted, so an older pin written back over it is seen for what it is. */
  async unpin(backend: string): Promise<void> {
    await this.options.records.put(backend, { backend, version: null, on: 'all', installMissing: false, rollout: null });
  }

  /** Gives back what a rollout replaced, unless a later pin replaced the rollout's own meanwhile. */
  async restore(backend: string, rollout: string, previous: DesiredBody | null): Promise<void> {
    if (this.current(backend)?.rollout !== rollout) return;
    if (previous?.version) await this.options.records.put(backend, previous);
    else await this.unpin(backend);
  }

  close(): void {
    clearTimeout(this.timer);
    this.options.records.off('change', this.changed);
    this.options.status.off('change', this.changed);
  }

  private snapshot(): DesiredStateView {
    const store = this.options.store();
    return {
      available: store.available,
      reason: store.reason,
      desired: this.options.records.all().flatMap((e) => versionOf(e) ?? []).sort((a, b) => a.backend.localeCompare(b.backend)),
      nodes: this.options.status.all().flatMap((e) => e.value.convergence),
    };
  }
}

function versionOf(entry: RecordEntry<DesiredBody>): DesiredVersion | null {
  const { backend, version, on, installMissing, rollout } = entry.value;
  if (version === null) return null;
  return { backend, version, on, installMissing, rollout, by: entry.by, at: new Date(entry.at).toISOString() };
}
