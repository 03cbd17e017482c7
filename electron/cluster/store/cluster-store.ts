// The cluster's durable state, in JetStream key-value buckets on its nats-server: the desired version of each backend
// (written by viewers, each under its own key id), rollout records (written by the viewer that runs or resumes one),
// each node's own convergence status (written by that node, under its own id only) and, in a cluster joined by
// invitation, the members admins granted (grants.ts). Viewers make the buckets,
// with the limits of store-limits.ts; nodes only open them, so a node's credentials need no right to create anything.
// Every host takes only values signed by its own key or a key its trust list holds (a node's status: by that node).
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { EventEmitter } from 'node:events';
import type { ClusterStatusView } from '../../../shared/types.ts';
import type { ClusterHealth } from '../health.ts';
import { parsePublicKey, type ClusterIdentity, type PublicKey } from '../node-key.ts';
import { BUCKETS, type BucketName } from '../subjects.ts';
import { backendOfKey, desiredBodySchema, rolloutRecordSchema, statusBodySchema, writerOfKey, type DesiredBody, type RolloutRecord, type StatusBody } from './bodies.ts';
import { BucketSource } from './bucket-source.ts';
import { grantBodySchema, type GrantBody } from './grants.ts';
import { KvRecords, logicalKey, PLAIN_KEYS, storageKey, type KeyCodec } from './kv-records.ts';
import { SeenMarks } from './seen-marks.ts';
import { makeBucket } from './make-bucket.ts';
import { bucketStreamConfig } from './store-limits.ts';
import { BucketSweep } from './sweep.ts';
import { HangarError } from '../../../shared/errors.ts';

export interface ClusterStoreOptions {
  nc: NatsConnection;
  /** This host's key, with the cluster it joined (cluster-id.ts): every record is signed for that cluster. */
  identity: ClusterIdentity;
  health: ClusterHealth;
  /** A viewer makes the buckets and reads the nodes' status; a node only opens what it reads and writes. */
  viewer: boolean;
  /** Whether this host takes values signed by `signer` (its own key is always taken). */
  trusts(signer: PublicKey): Promise<boolean>;
  stateDir: string;
  /** An admin viewer's: remove the desired versions and rollouts this host does not take once this old (sweep.ts). */
  sweepAfterMs?: number;
  /** The admins whose grants this host takes (an invited cluster's); none: the members bucket is not read. */
  grantors?: string[];
}

/** A desired version's key in the bucket: its backend, then its writer's key id (a record of an earlier Hangar: the backend alone). */
const desiredKeys: KeyCodec = {
  toStored: (key) => {
    const by = writerOfKey(key);
    return by ? `${storageKey(backendOfKey(key))}.${by}` : storageKey(backendOfKey(key));
  },
  fromStored: (stored) => {
    const [backend = '', by = '', ...more] = stored.split('.');
    if (more.length > 0 || (by !== '' && !/^[0-9a-f]{16}$/.test(by))) return null;
    return `${logicalKey(backend)}/${by}`;
  },
};

export class ClusterStore extends EventEmitter<{ availability: [ClusterStatusView['store']] }> {
  readonly desired: KvRecords<DesiredBody>;
  readonly rollouts: KvRecords<RolloutRecord>;
  /** Read by viewers only; a node writes its own key through it. */
  readonly status: KvRecords<StatusBody>;
  /** The members admins invited, in a cluster joined by invitation (grants.ts). */
  readonly grants: KvRecords<GrantBody> | null;
  private readonly kvm: Kvm;
  private readonly opened = new Map<BucketName, Promise<KV>>();
  private readonly problems = new Map<BucketName, string>();
  private readonly marks: SeenMarks;
  private readonly sweeps: BucketSweep[] = [];
  private state: ClusterStatusView['store'] = { available: false, reason: 'not read yet' };

  constructor(private readonly options: ClusterStoreOptions) {
    super();
    this.kvm = new Kvm(jetstream(options.nc));
    this.marks = new SeenMarks(options.stateDir);
    const own = options.identity.id;
    const trusts = async (signer: PublicKey) => signer.id === own || (await options.trusts(signer));
    const common = { identity: options.identity, cluster: options.identity.cluster ?? '', health: options.health, marks: this.marks, trusts };
    const sources = new Map<BucketName, BucketSource>();
    const source = (name: BucketName) => {
      const made = new BucketSource({ nc: options.nc, name, open: () => this.bucket(name) });
      sources.set(name, made);
      return made;
    };
    this.desired = new KvRecords({
      ...common,
      kind: 'desired',
      schema: desiredBodySchema,
      source: source(BUCKETS.desired),
      keys: desiredKeys,
      // A viewer writes only under its own id; a record of an earlier Hangar names none.
      accept: (key, signer, value) => (value === null || value.backend === backendOfKey(key)) && [signer.id, ''].includes(writerOfKey(key)),
      onAvailability: this.availability(BUCKETS.desired),
    });
    this.rollouts = new KvRecords({ ...common, kind: 'rollout', schema: rolloutRecordSchema, source: source(BUCKETS.rollouts), onAvailability: this.availability(BUCKETS.rollouts) });
    this.status = new KvRecords({
      ...common,
      // A node speaks only for itself, and that is all a status needs.
      trusts: async () => true,
      kind: 'status',
      schema: statusBodySchema,
      source: source(BUCKETS.status),
      accept: (key, signer, value) => signer.id === key && (value === null || value.node === key),
      onAvailability: this.availability(BUCKETS.status),
    });
    const grantors = options.grantors ?? [];
    this.grants = grantors.length === 0 ? null : new KvRecords({
      ...common,
      trusts: async (signer) => grantors.includes(signer.text),
      kind: 'grant',
      schema: grantBodySchema,
      source: source(BUCKETS.members),
      // Kept under the key id of the key it grants.
      accept: (key, _signer, value) => value === null || parsePublicKey(value.key)?.id === key,
      onAvailability: this.availability(BUCKETS.members),
    });
    if (options.viewer && options.sweepAfterMs) {
      const sweep = (name: BucketName, records: KvRecords<unknown>, keys: KeyCodec, markers: boolean) =>
        new BucketSweep({
          source: sources.get(name)!,
          reread: () => records.reread(),
          holds: (stored, revision) => {
            const key = keys.fromStored(stored);
            return key !== null && records.get(key)?.revision === revision;
          },
          afterMs: options.sweepAfterMs!,
          markers,
        });
      this.sweeps.push(
        sweep(BUCKETS.desired, this.desired, desiredKeys, false),
        // A finished rollout past the few kept is deleted, leaving a marker each time.
        sweep(BUCKETS.rollouts, this.rollouts, PLAIN_KEYS, true),
      );
    }
  }

  start(): void {
    this.desired.start();
    this.rollouts.start();
    if (this.options.viewer) this.status.start();
    this.grants?.start();
    for (const sweep of this.sweeps) sweep.start();
  }

  /** Reads every record again: the link came back (writes made meanwhile were not heard), or the trust list changed. */
  reread(): void {
    void this.desired.reread();
    void this.rollouts.reread();
    if (this.options.viewer) void this.status.reread();
    void this.grants?.reread();
  }

  view(): ClusterStatusView['store'] {
    return { ...this.state };
  }

  /** The desired versions and rollouts in the store that this host does not take, with the key ids that signed them. */
  untrusted(): ClusterStatusView['untrusted'] {
    const at = (ms: number) => new Date(ms).toISOString();
    return [
      ...this.desired.untrusted().map((r) => ({ bucket: 'desired' as const, name: backendOfKey(r.key), by: r.by, at: at(r.at) })),
      ...this.rollouts.untrusted().map((r) => ({ bucket: 'rollouts' as const, name: r.key, by: r.by, at: at(r.at) })),
    ];
  }

  async close(): Promise<void> {
    this.desired.close();
    this.rollouts.close();
    this.status.close();
    this.grants?.close();
    await Promise.all(this.sweeps.map((sweep) => sweep.close()));
    await this.marks.flush();
  }

  private bucket(name: BucketName): Promise<KV> {
    let kv = this.opened.get(name);
    if (!kv) {
      kv = (this.options.viewer ? this.make(name) : Promise.resolve()).then(() => this.checkMade(name)).then(() => this.kvm.open(name, { allow_direct: true }));
      // A failed open is tried again next time.
      kv.catch(() => this.opened.delete(name));
      this.opened.set(name, kv);
    }
    return kv;
  }

  /**
   * Makes the bucket unless it is there (makeBucket). Not through @nats-io/kv's create, which allows rollup headers (one value sent
   * with `Nats-Rollup: all` would purge the whole bucket); a bucket that is there is taken as it is.
   */
  private make(name: BucketName): Promise<void> {
    return makeBucket(this.options.nc, name);
  }

  /**
   * A bucket is used only as Hangar makes it: any viewer may make it, and one with valid credentials that no one trusts
   * could make it first, with rollups or purges allowed (one value would then erase every key) or more values per key.
   */
  private async checkMade(name: BucketName): Promise<void> {
    // A node may not read the status bucket, where it writes its own key only: the viewers, who read it, check it.
    if (!this.options.viewer && name === BUCKETS.status) return;
    const jsm = await jetstreamManager(this.options.nc, { checkAPI: false });
    const { config } = await jsm.streams.info(`KV_${name}`);
    const wanted = bucketStreamConfig(name);
    const wrong = [
      config.allow_rollup_hdrs && 'it allows rollup headers',
      !config.deny_purge && 'it allows purges',
      config.max_msgs_per_subject !== 1 && `it keeps ${config.max_msgs_per_subject} values per key`,
      config.subjects.join() !== wanted.subjects.join() && `it stores ${config.subjects.join(', ')}`,
    ].filter(Boolean);
    if (wrong.length > 0) {
      throw new HangarError('conflict', `the cluster's ${name} bucket was not made as Hangar makes it (${wrong.join('; ')}): delete stream KV_${name} with the NATS tools, and a viewer makes it again`);
    }
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
