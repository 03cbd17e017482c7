// The cluster's durable state, in three JetStream key-value buckets on its nats-server: the desired version of each
// backend (written by viewers), rollout records (written by the viewer that runs or resumes one) and each node's
// own convergence status (written by that node, under its own id only). Viewers make the buckets; nodes only open
// them, so a node's credentials need no right to create anything.
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { EventEmitter } from 'node:events';
import type { ClusterStatusView } from '../../../shared/types.ts';
import type { ClusterHealth } from '../health.ts';
import type { ClusterIdentity } from '../identity.ts';
import { desiredBodySchema, rolloutRecordSchema, statusBodySchema, type DesiredBody, type RolloutRecord, type StatusBody } from './bodies.ts';
import { BUCKETS, type BucketName } from '../subjects.ts';
import { KvRecords } from './kv-records.ts';


export interface ClusterStoreOptions {
  nc: NatsConnection;
  identity: ClusterIdentity;
  health: ClusterHealth;
  /** Where this user's JetStream replies and watch deliveries arrive (its own inbox prefix). */
  inboxPrefix: string;
  /** A viewer makes the buckets and watches the nodes' status; a node only opens what it reads and writes. */
  viewer: boolean;
}

export class ClusterStore extends EventEmitter<{ availability: [ClusterStatusView['store']] }> {
  readonly desired: KvRecords<DesiredBody>;
  readonly rollouts: KvRecords<RolloutRecord>;
  /** Read by viewers only; a node writes its own key through it. */
  readonly status: KvRecords<StatusBody>;
  private readonly kvm: Kvm;
  private readonly opened = new Map<BucketName, Promise<KV>>();
  private readonly problems = new Map<BucketName, string>();
  private state: ClusterStatusView['store'] = { available: false, reason: 'not read yet' };

  constructor(private readonly options: ClusterStoreOptions) {
    super();
    this.kvm = new Kvm(jetstream(options.nc, { watcherPrefix: options.inboxPrefix }));
    const common = { identity: options.identity, health: options.health };
    this.desired = new KvRecords({ ...common, kind: 'desired', schema: desiredBodySchema, bucket: () => this.bucket(BUCKETS.desired), onAvailability: this.availability(BUCKETS.desired) });
    this.rollouts = new KvRecords({ ...common, kind: 'rollout', schema: rolloutRecordSchema, bucket: () => this.bucket(BUCKETS.rollouts), onAvailability: this.availability(BUCKETS.rollouts) });
    this.status = new KvRecords({
      ...common,
      kind: 'status',
      schema: statusBodySchema,
      bucket: () => this.bucket(BUCKETS.status),
      // A node speaks only for itself.
      accept: (key, signer, value) => signer.id === key && value.node === key,
      onAvailability: this.availability(BUCKETS.status),
    });
  }

  start(): void {
    this.desired.start();
    this.rollouts.start();
    if (this.options.viewer) this.status.start();
  }

  view(): ClusterStatusView['store'] {
    return { ...this.state };
  }

  close(): void {
    this.desired.close();
    this.rollouts.close();
    this.status.close();
  }

  private bucket(name: BucketName): Promise<KV> {
    let kv = this.opened.get(name);
    if (!kv) {
      kv = this.options.viewer ? this.kvm.create(name, { history: 1 }) : this.kvm.open(name);
      // A failed open is tried again next time.
      kv.catch(() => this.opened.delete(name));
      this.opened.set(name, kv);
    }
    return kv;
  }

  private availability(name: BucketName): (available: boolean, reason: string | null) => void {
    return (available, reason) => {
      if (available) this.problems.delete(name);
      else this.problems.set(name, reason ?? 'unavailable');
      const next = { available: this.problems.size === 0, reason: this.problems.values().next().value ?? null };
      if (next.available === this.state.available && next.reason === this.state.reason) return;
      this.state = next;
      this.emit('availability', this.view());
    };
  }
}
